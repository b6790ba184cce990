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

export function fillMacros(template: string, values: MacroValues): string {
  return template.replace(MACRO, (_, name: keyof MacroValues) => encodeURIComponent(values[name] ?? ''));
}
