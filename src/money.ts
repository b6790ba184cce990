import { iso4217MinorUnits } from './iso4217.js';

/**
 * Amounts are stored as whole numbers of the currency's minor unit (cents for USD, yen for
 * JPY, fils for KWD) and written by people in major units ("12.50"). These are the one
 * conversion between the two, for the pixel postback, partner postback macros, the
 * dashboard's forms, its CSV exports and the amounts the pages show (dashboard/format.ts).
 */

/**
 * The largest amount of one conversion, offer or payout minimum, in minor units: ten billion
 * in major units of a two-decimal currency, beyond any real payout, and far enough below 2^53 that sums of many stay exact.
 */
export const MAX_AMOUNT_CENTS = 1_000_000_000_000;

const DIGITS_OF_A_WITHDRAWN_CODE = 2;

/**
 * Digits after the decimal point of a currency, ISO 4217's minor unit (2 for USD and HUF, 0
 * for JPY, 3 for KWD and IQD, 4 for CLF); 2 for a code not in ISO's current list, which only
 * a stored amount can have: one in a currency withdrawn since (HRK, BGN, SLL, ZWL, ANG, CUC
 * all had 2), or in XDR or XSU (accepted before, and read with 2 decimals then). Every
 * conversion between minor and major units takes its digits from here.
 */
export function currencyDecimals(currency: string): number {
  return iso4217MinorUnits(currency) ?? DIGITS_OF_A_WITHDRAWN_CODE;
}

/** Minor units as a number of major units: 1250 USD → 12.5, 600 JPY → 600. */
export function toMajorUnits(minor: number, currency: string): number {
  return minor / 10 ** currencyDecimals(currency);
}

/**
 * Minor units as a plain decimal in major units: 1250 USD → `12.50`, 600 JPY → `600`.
 * An average of minor units (earnings per click) keeps `extraDecimals` more: 12.3456 → `0.1235`.
 */
export function formatMajorUnits(minor: number, currency: string, extraDecimals = 0): string {
  return toMajorUnits(minor, currency).toFixed(currencyDecimals(currency) + extraDecimals);
}

/**
 * Parses an amount in major units (`12.5`, `12.50`, `12`) into minor units of `currency`
 * (1250 for USD); null when it is not one: a sign, an exponent, more decimals than the
 * currency has, or more than `maxWholeDigits` digits before the point.
 */
export function parseMajorUnits(text: string, currency: string, maxWholeDigits = 12): number | null {
  const decimals = currencyDecimals(currency);
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match?.[1] || match[1].length > maxWholeDigits) return null;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) return null;
  return Number(match[1]) * 10 ** decimals + Number(fraction.padEnd(decimals, '0') || '0');
}
