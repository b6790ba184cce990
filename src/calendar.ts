/**
 * Brand-local calendar arithmetic on epoch milliseconds: which local day an instant falls
 * on, and when a local day, week (Monday start) or month begins and ends. Reports and caps
 * count in the brand's IANA time zone, DST included.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export interface LocalDate {
  year: number;
  month: number; // 1-12
  day: number;
}

function localParts(ms: number, timeZone: string): LocalDate & { hour: number; minute: number; second: number } {
  const out = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of formatter(timeZone).formatToParts(ms)) {
    if (part.type in out) out[part.type as keyof typeof out] = Number(part.value);
  }
  return out;
}

/** Offset of `timeZone` from UTC at instant `ms`, in milliseconds. */
function offsetAt(ms: number, timeZone: string): number {
  const p = localParts(ms, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

export function localDate(ms: number, timeZone: string): LocalDate {
  const { year, month, day } = localParts(ms, timeZone);
  return { year, month, day };
}

export function formatDay({ year, month, day }: LocalDate): string {
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

export function parseDay(text: string): LocalDate {
  const [year, month, day] = text.split('-').map(Number);
  return { year: year ?? 0, month: month ?? 0, day: day ?? 0 };
}

/** True for a `YYYY-MM-DD` that exists on the calendar (not 2026-02-30). */
export function isRealDay(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && formatDay(addDays(parseDay(text), 0)) === text;
}

const INSTANT =
  /^(\d{4}-\d{2}-\d{2})[Tt ]([01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/**
 * Whether `text` is an ISO 8601 / RFC 3339 instant with a zone, the one rule of every
 * timestamp parameter: a real calendar day, `T` (or `t`, or a space), hours 00–23, seconds and
 * up to nine fractional digits optional, `Z` or an offset. `Date.parse` reads all of these.
 */
export function isInstant(text: string): boolean {
  const match = INSTANT.exec(text);
  return match !== null && isRealDay(match[1] as string);
}

function dayAt(ms: number, timeZone: string): string {
  return formatDay(localDate(ms, timeZone));
}

/** Per time zone, the last local day computed and the instants it spans. */
const dayCache = new Map<string, { day: string; start: number; end: number }>();

/**
 * The brand-local day (`YYYY-MM-DD`) an instant falls on. Every click and conversion asks,
 * almost always for the current day, so each zone's current day and its bounds are kept
 * (formatting a date in a zone costs ~20 µs).
 */
export function localDay(ms: number, timeZone: string): string {
  const cached = dayCache.get(timeZone);
  if (cached && ms >= cached.start && ms < cached.end) return cached.day;
  const date = localDate(ms, timeZone);
  const day = formatDay(date);
  const start = startOfLocalDay(date, timeZone);
  const end = startOfLocalDay(addDays(date, 1), timeZone);
  if (ms >= start && ms < end) dayCache.set(timeZone, { day, start, end });
  return day;
}

/** Longest DST jump of any zone (Lord Howe's is 30 min, most are 1 h): the search window below. */
const MAX_DST_SHIFT_MS = 3 * 3_600_000;

/**
 * The first instant of `date` in `timeZone`: local midnight, or — where a DST change skips
 * midnight (America/Santiago, Asia/Beirut…) — the first local time that exists that day.
 */
export function startOfLocalDay(date: LocalDate, timeZone: string): number {
  const guess = Date.UTC(date.year, date.month - 1, date.day);
  const first = guess - offsetAt(guess, timeZone);
  // Near a DST change the offset at the guess can differ from the offset at the answer.
  const candidate = guess - offsetAt(first, timeZone);
  const day = formatDay(date);
  if (dayAt(candidate, timeZone) === day && dayAt(candidate - 1, timeZone) !== day) return candidate;
  // Midnight does not exist (or was found ambiguous): search for the day's first instant.
  let lo = Math.min(first, candidate) - MAX_DST_SHIFT_MS;
  let hi = Math.max(first, candidate) + MAX_DST_SHIFT_MS;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (dayAt(mid, timeZone) >= day) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * A plain date as a UTC Date. setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as
 * 1900–1999, and reports use 0000-01-01 as "since the beginning".
 */
function utcDate(year: number, month: number, day: number): Date {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d;
}

/** Calendar arithmetic on plain dates (no time zone involved). */
export function addDays(date: LocalDate, days: number): LocalDate {
  const d = utcDate(date.year, date.month, date.day + days);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** Whole days from `from` to `to` (negative when `to` is earlier); years past 9999 included. */
export function daysBetween(from: LocalDate, to: LocalDate): number {
  return (
    (utcDate(to.year, to.month, to.day).getTime() - utcDate(from.year, from.month, from.day).getTime()) / 86_400_000
  );
}

/**
 * Every day from `from` to `to` (YYYY-MM-DD), both included. Counted, not compared as text:
 * the day after 9999-12-31 is "10000-01-01", which sorts before it.
 */
export function eachDay(from: string, to: string): LocalDate[] {
  const first = parseDay(from);
  const count = daysBetween(first, parseDay(to)) + 1;
  return Array.from({ length: Math.max(0, count) }, (_, i) => addDays(first, i));
}

/** ISO weekday: Monday 1 … Sunday 7. */
export function weekday(date: LocalDate): number {
  const d = utcDate(date.year, date.month, date.day).getUTCDay();
  return d === 0 ? 7 : d;
}

export function mondayOf(date: LocalDate): LocalDate {
  return addDays(date, 1 - weekday(date));
}

export type Period = 'daily' | 'weekly' | 'monthly';

/** [start, end) of the brand-local day, week (Monday start) or month containing `ms`. */
export function periodBounds(period: Period, ms: number, timeZone: string): { start: number; end: number } {
  const today = localDate(ms, timeZone);
  let first: LocalDate;
  let next: LocalDate;
  if (period === 'daily') {
    first = today;
    next = addDays(today, 1);
  } else if (period === 'weekly') {
    first = mondayOf(today);
    next = addDays(first, 7);
  } else {
    first = { year: today.year, month: today.month, day: 1 };
    next =
      today.month === 12
        ? { year: today.year + 1, month: 1, day: 1 }
        : { year: today.year, month: today.month + 1, day: 1 };
  }
  return { start: startOfLocalDay(first, timeZone), end: startOfLocalDay(next, timeZone) };
}
