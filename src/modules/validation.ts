/** Checks shared by several features: real ISO 4217 codes and IANA time zones. */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** Any case is accepted (`eur`); the code is stored upper case (`currencyCode`). */
export function isCurrencyCode(code: string): boolean {
  return CURRENCIES.has(code.toUpperCase());
}

export function currencyCode(code: string): string {
  return code.toUpperCase();
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
