/** Checks shared by several features: real ISO 4217 codes and IANA time zones. */
import { isOrWasIso4217Code, iso4217MinorUnits } from '../iso4217.js';

/**
 * A code in ISO 4217's current list (iso4217.ts), any case (`eur`); the code is stored upper
 * case (`currencyCode`). Only new input is checked: an amount stored in a code withdrawn
 * since (HRK) is still read and shown.
 */
export function isCurrencyCode(code: string): boolean {
  return iso4217MinorUnits(code.toUpperCase()) !== undefined;
}

/**
 * A code a filter over stored amounts may name, any case: a current code, or one ISO 4217 had
 * (HRK, SLL, ZWL, XDR…), in which amounts stored before may be (iso4217.ts). New amounts stay
 * strict: they take isCurrencyCode.
 */
export function isStoredCurrencyCode(code: string): boolean {
  return isOrWasIso4217Code(code.toUpperCase());
}

export function currencyCode(code: string): string {
  return code.toUpperCase();
}

/**
 * The zones IANA has renamed, by the old name Node 20's Intl (ICU) still gives them: ICU
 * canonicalises to CLDR's ids, which kept the first name a zone had, so `Asia/Kolkata` came
 * back as `Asia/Calcutta` and `Europe/Kyiv` as `Europe/Kiev`. The list is every `iana=`
 * attribute of CLDR's common/bcp47/timezone.xml (CLDR 44 onwards: the current IANA name where
 * it differs from CLDR's id), checked against IANA's `backward` file of tzdata 2025b, which
 * has each old name as a link to its new one (`Link Asia/Kolkata Asia/Calcutta`). Zones IANA
 * merged into another country's (`Europe/Bratislava`, a link to `Europe/Prague` there) are
 * not renames: CLDR, ICU and ECMAScript's Temporal keep them apart, and so do we. An Intl that
 * already answers the new names (a later ICU) simply finds nothing here.
 */
const IANA_NAMES = new Map([
  ['Africa/Asmera', 'Africa/Asmara'],
  ['America/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
  ['America/Catamarca', 'America/Argentina/Catamarca'],
  ['America/Coral_Harbour', 'America/Atikokan'],
  ['America/Cordoba', 'America/Argentina/Cordoba'],
  ['America/Godthab', 'America/Nuuk'],
  ['America/Indianapolis', 'America/Indiana/Indianapolis'],
  ['America/Jujuy', 'America/Argentina/Jujuy'],
  ['America/Louisville', 'America/Kentucky/Louisville'],
  ['America/Mendoza', 'America/Argentina/Mendoza'],
  ['Asia/Calcutta', 'Asia/Kolkata'],
  ['Asia/Katmandu', 'Asia/Kathmandu'],
  ['Asia/Rangoon', 'Asia/Yangon'],
  ['Asia/Saigon', 'Asia/Ho_Chi_Minh'],
  ['Atlantic/Faeroe', 'Atlantic/Faroe'],
  ['Europe/Kiev', 'Europe/Kyiv'],
  ['Pacific/Enderbury', 'Pacific/Kanton'],
  ['Pacific/Ponape', 'Pacific/Pohnpei'],
  ['Pacific/Truk', 'Pacific/Chuuk'],
]);

/**
 * Intl (and PostgreSQL) read zone names in any case (`europe/berlin`), so any case is
 * accepted; the zone is stored as IANA names it today (`Europe/Berlin`, `UTC`,
 * `Asia/Kolkata`), as currency codes are stored upper case, so `GET /brand` answers the name
 * a client set. Intl resolves a link to its zone (`US/Eastern` → `America/New_York`), and a
 * renamed zone's old name then becomes its current one (`Asia/Calcutta` → `Asia/Kolkata`).
 */
export function canonicalTimeZone(zone: string): string {
  const id = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  return IANA_NAMES.get(id) ?? id;
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
