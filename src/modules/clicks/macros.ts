/** Fills `{click_id} {partner_id} {offer_id} {sub1}…{sub5}` in a destination URL, URL-encoded. */
const MACRO = /\{(click_id|partner_id|offer_id|sub[1-5])\}/g;

export interface MacroValues {
  click_id: string;
  partner_id: string;
  offer_id: string;
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
}

/**
 * Macros are filled after the host only: an offer saved before host macros were refused
 * (`https://{sub1}/`) must not let a visitor's sub-id choose where the link leads.
 */
export function fillMacros(template: string, values: MacroValues): string {
  const afterHost = hostEnd(template);
  const filled = template
    .slice(afterHost)
    .replace(MACRO, (_, name: keyof MacroValues) => encodeURIComponent(values[name] ?? ''));
  return template.slice(0, afterHost) + filled;
}

/** Where the scheme and host (`https://shop.example`) of an absolute URL end. */
function hostEnd(url: string): number {
  const authority = url.indexOf('//');
  if (authority === -1) return 0;
  const end = url.slice(authority + 2).search(/[/?#]/);
  return end === -1 ? url.length : authority + 2 + end;
}
