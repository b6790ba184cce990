/**
 * Every value a page shows goes through here, so each kind has one look everywhere: times
 * in the brand's time zone ("23 Nov 2026, 14:05"), days ("23 Nov 2026"), money from minor
 * units in its currency, percentages with one decimal ("24.1%"), fraud signals in words.
 */
import { currencyDecimals, toMajorUnits } from '../../money.js';
import { roundedRatio } from '../../ratio.js';

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();
/** Per currency, the full (`$1,234.50`) and the compact (`$1.2K`) look. */
const moneyFormats = new Map<string, { full: Intl.NumberFormat; compact: Intl.NumberFormat }>();
const integers = new Intl.NumberFormat('en-US');
const percents = new Intl.NumberFormat('en-US', {
  style: 'percent',
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});
// Calendar days are formatted as UTC midnights: a day has no time zone of its own.
const days = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', dateStyle: 'medium' });
const shortDays = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'short' });
const months = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'short', year: 'numeric' });

function dateTimeFormat(timeZone: string): Intl.DateTimeFormat {
  let f = dateTimeFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'medium', timeStyle: 'short', hourCycle: 'h23' });
    dateTimeFormats.set(timeZone, f);
  }
  return f;
}

function moneyFormat(currency: string) {
  let f = moneyFormats.get(currency);
  if (!f) {
    f = {
      // Intl's own digits are CLDR's (0 for HUF, whose minor unit is 2): ISO's are shown.
      full: new Intl.NumberFormat('en-US', {
        style: 'currency',
        currency,
        minimumFractionDigits: currencyDecimals(currency),
        maximumFractionDigits: currencyDecimals(currency),
      }),
      compact: new Intl.NumberFormat('en-US', {
        style: 'currency',
        currency,
        notation: 'compact',
        maximumFractionDigits: 1,
      }),
    };
    moneyFormats.set(currency, f);
  }
  return f;
}

/** An amount in minor units, in its currency (`$1,234.50`, `¥600`). */
export function money(cents: number, currency: string): string {
  return moneyFormat(currency).full.format(toMajorUnits(cents, currency));
}

/** Short amounts for chart axes, currency sign kept (`$1.2M`). */
export function compactMoney(cents: number, currency: string): string {
  return moneyFormat(currency).compact.format(toMajorUnits(cents, currency));
}

/**
 * Payout per click in whole minor units, rounded half up from the sums themselves: rounding a
 * report's `epcCents` (already two decimals) again would show 50 ¢ over 101 clicks (0.495 ¢)
 * as 1 ¢, where the lists' numbers show 0 ¢.
 */
export function epcMinorUnits(payoutCents: number, clicks: number): number {
  return clicks > 0 ? roundedRatio(payoutCents, clicks, 0) : 0;
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

/** A `YYYY-MM-DD` day as "23 Nov 2026" (`short`: "23 Nov"); a `YYYY-MM` month as "Nov 2026". */
export function day(text: string, short = false): string {
  if (text.length === 7) return months.format(Date.parse(`${text}-01T00:00:00Z`));
  const ms = Date.parse(`${text}T00:00:00Z`);
  if (Number.isNaN(ms)) return text;
  return (short ? shortDays : days).format(ms);
}

const SIGNAL_WORDS: Record<string, string> = {
  high_risk_score: 'high risk score',
  datacenter_ip: 'data-centre IP',
  blocklist_hit: 'on the blocklist',
  bot_user_agent: 'bot user agent',
  click_velocity: 'too many clicks from one IP',
};

/** A click's stored fraud signals (a JSON array of codes) in words. */
export function fraudSignals(json: string): string {
  const codes = JSON.parse(json) as string[];
  if (codes.length === 0) return 'none';
  return codes.map((c) => SIGNAL_WORDS[c] ?? c.replaceAll('_', ' ')).join(', ');
}

const regionNames = new Intl.DisplayNames('en', { type: 'region', fallback: 'code' });

/** An ISO 3166-1 alpha-2 code in words with the code ("Germany (DE)"); `null` when unknown. */
export function country(code: string | null): string | null {
  if (!code) return null;
  let name = code;
  try {
    name = regionNames.of(code) ?? code;
  } catch {
    // Not a well-formed region code (stored data is, but a page never breaks on it).
  }
  return name === code ? code : `${name} (${code})`;
}

/** What the User-Agent said of a click's device: "mobile · iOS · Mobile Safari"; null when nothing. */
export function device(c: { device_type: string | null; os: string | null; browser: string | null }): string | null {
  const parts = [c.device_type, c.os, c.browser].filter(Boolean);
  return parts.length > 0 ? parts.join(' · ') : null;
}

/** A click's or conversion's sub ids as `sub1=a sub3=c`; null when it has none. */
export function subIds(row: {
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
}): string | null {
  const subs = [row.sub1, row.sub2, row.sub3, row.sub4, row.sub5].flatMap((s, i) => (s ? [`sub${i + 1}=${s}`] : []));
  return subs.length > 0 ? subs.join(' ') : null;
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
