/**
 * Every value a page shows goes through here: times in the brand's time zone, money from
 * minor units in its currency, plain numbers and durations. Plain decimals for form fields
 * and CSV come from src/money.ts.
 */
import { currencyDecimals } from '../../money.js';

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();
const moneyFormats = new Map<string, Intl.NumberFormat>();
const integers = new Intl.NumberFormat('en-US');
const percents = new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 2 });

function dateTimeFormat(timeZone: string): Intl.DateTimeFormat {
  let f = dateTimeFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'medium', timeStyle: 'short', hourCycle: 'h23' });
    dateTimeFormats.set(timeZone, f);
  }
  return f;
}

function moneyFormat(currency: string): Intl.NumberFormat {
  let f = moneyFormats.get(currency);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    moneyFormats.set(currency, f);
  }
  return f;
}

export function money(cents: number, currency: string): string {
  return moneyFormat(currency).format(cents / 10 ** currencyDecimals(currency));
}

export function count(n: number): string {
  return integers.format(n);
}

export function percent(fraction: number): string {
  return percents.format(fraction);
}

export function dateTime(ms: number, timeZone: string): string {
  return dateTimeFormat(timeZone).format(ms);
}

/** Seconds as the largest whole unit (`7200` → `2 h`). */
export function duration(seconds: number): string {
  for (const [size, unit] of [
    [86_400, 'd'],
    [3600, 'h'],
    [60, 'min'],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}
