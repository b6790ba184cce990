/**
 * `Accept` negotiation between JSON (the default) and CSV, with RFC 9110 §12.5.1's weights:
 * CSV only when `text/csv` is named with a weight above 0 that no JSON range in the header
 * beats. `text/csv;q=0` is "not CSV", `text/csv;q=0.5, application/json` and
 * `application/json, text/csv` (equal weights: the first listed wins) are JSON.
 */

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
  order: number;
}

function mediaRanges(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const [order, part] of accept.split(',').entries()) {
    const [range = '', ...params] = part.split(';');
    const [type, subtype] = range.trim().toLowerCase().split('/');
    if (!type || !subtype) continue;
    let q = 1;
    for (const param of params) {
      const [name, value] = param.split('=').map((text) => text.trim());
      // A weight is 0 to 1 with at most three decimals; anything else leaves the range at 1.
      if (name?.toLowerCase() === 'q' && value !== undefined && /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value)) {
        q = Number(value);
      }
    }
    ranges.push({ type, subtype, q, order });
  }
  return ranges;
}

/** The range of `ranges` that applies to type/subtype (the most specific), or undefined. */
function rangeFor(ranges: MediaRange[], type: string, subtype: string): MediaRange | undefined {
  const specificity = (r: MediaRange) =>
    r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : 0;
  const matching = ranges.filter(
    (r) => (r.type === type || r.type === '*') && (r.subtype === subtype || r.subtype === '*'),
  );
  return matching.sort((a, b) => specificity(b) - specificity(a))[0];
}

/** True when the `Accept` header prefers CSV to JSON (see above). */
export function acceptsCsvOverJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = mediaRanges(accept);
  const csv = ranges.find((r) => r.type === 'text' && r.subtype === 'csv');
  if (!csv || csv.q <= 0) return false;
  const json = rangeFor(ranges, 'application', 'json');
  if (!json) return true;
  return csv.q > json.q || (csv.q === json.q && csv.order < json.order);
}

/**
 * A browser, or a client that names no preference; not one asking for JSON alone. The public
 * pages that a person opens (the tracking link, the application form) answer their errors
 * with a page then, and with the API's JSON otherwise.
 */
export function acceptsHtml(accept: string | undefined): boolean {
  return !accept || /text\/html|\*\/\*/.test(accept) || !accept.includes('json');
}
