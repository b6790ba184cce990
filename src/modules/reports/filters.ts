/**
 * A report's dimension filters (`?deviceType=mobile&country=DE`), checked and put in the
 * spelling the facts store, before they are matched exactly in SQL: a value outside a fixed
 * vocabulary, or in another case, matched nothing and gave a 200 of zeros — "no traffic".
 *
 * - Fixed vocabularies are checked: `deviceType` (any case), `country` (a code a click can be
 *   stored with, analytics/countryCodes.ts, any case: `UK` or `EU` would only ever match
 *   nothing), `hour` (00–23). A value outside them is a problem naming the parameter.
 * - Values whose case means nothing are normalised: `country` upper case, `deviceType` and
 *   `referrerHost` lower case (a host goes through the same WHATWG URL parser as the Referer
 *   it was read from, so `Bücher.Example` matches the stored `xn--bcher-kva.example`).
 * - `os`, `browser` and `sub1`…`sub5` match exactly (README, "Reports by dimension"): OS and
 *   browser names are ua-parser-js's own spellings, listed as they are by `groupBy=os` and
 *   `GET /clicks`, and matching them in any case would cost the rollups' value index.
 */
import type { Problem } from '../../errors.js';
import { COUNTRY_CODES } from '../analytics/countryCodes.js';
import { ATTRIBUTES, type Attribute, DEVICE_TYPES } from '../analytics/dimensions.js';

const HOUR = /^([01]\d|2[0-3])$/;
/** A bare host: a name or IPv4 address without port, path or credentials, or a bracketed IPv6 address. */
const BARE_HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@\\:[\]]+)$/;

const DEVICE_TYPE_LIST = DEVICE_TYPES.map((t) => `"${t}"`).join(', ');

/** The host a Referer with this host name would have been stored under; null if it is none. */
function storedHost(value: string): string | null {
  if (!BARE_HOST.test(value) || !URL.canParse(`http://${value}/`)) return null;
  return new URL(`http://${value}/`).hostname;
}

/** One filter value in its stored spelling, or the rule it breaks. */
function storedValue(attribute: Attribute, value: string): { value: string } | { problem: string } {
  // The rollups keep a missing value and an empty one both as '' while the facts keep them
  // apart, so '' would match every fact without the attribute or none, depending on the
  // report's other dimensions. The API's schema refuses it; so does this, for every caller.
  if (value === '') return { problem: 'must not be empty: leave the filter out to match every value' };
  switch (attribute) {
    case 'deviceType': {
      const type = value.toLowerCase();
      return (DEVICE_TYPES as readonly string[]).includes(type)
        ? { value: type }
        : { problem: `must be one of ${DEVICE_TYPE_LIST}` };
    }
    case 'country': {
      const code = value.toUpperCase();
      if (COUNTRY_CODES.has(code)) return { value: code };
      // The one code people often mean a country by: ISO reserves UK, the data says GB.
      const hint = code === 'UK' ? '; the United Kingdom is GB' : '';
      return { problem: `must be an ISO 3166-1 alpha-2 country code such as DE (any case)${hint}` };
    }
    case 'referrerHost': {
      const host = storedHost(value);
      return host ? { value: host } : { problem: 'must be a host name such as news.example (no scheme, port or path)' };
    }
    case 'hour':
      return HOUR.test(value) ? { value } : { problem: 'must be an hour of the day, 00 to 23' };
    default:
      return { value };
  }
}

/** The query's dimension filters in their stored spelling; every broken rule in `problems`. */
export function dimensionFilters(
  query: Partial<Record<Attribute, string>>,
  problems: Problem[],
): Partial<Record<Attribute, string>> {
  const filters: Partial<Record<Attribute, string>> = {};
  for (const attribute of ATTRIBUTES) {
    const given = query[attribute];
    if (given === undefined) continue;
    const checked = storedValue(attribute, given);
    if ('value' in checked) filters[attribute] = checked.value;
    else problems.push({ path: `query.${attribute}`, message: checked.problem });
  }
  return filters;
}
