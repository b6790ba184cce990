/** Checks shared by several features: real ISO 4217 codes and IANA time zones. */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** Any case is accepted (`eur`); the code is stored upper case (`currencyCode`). */
export function isCurrencyCode(code: string): boolean {
  return CURRENCIES.has(code.toUpperCase());
}

export function currencyCode(code: string): string {
  return code.toUpperCase();
}

/**
 * Intl (and PostgreSQL) read zone names in any case (`europe/berlin`), so any case is
 * accepted; the zone is stored as Intl spells it (`Europe/Berlin`, `UTC`), as currency codes
 * are stored upper case, so `GET /brand` answers a name found in the IANA list. Intl also
 * resolves some links to their zone (`US/Eastern` → `America/New_York`): the same zone.
 */
export function canonicalTimeZone(zone: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
