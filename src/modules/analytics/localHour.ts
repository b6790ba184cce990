/**
 * The brand-local hour of day ('00'–'23') of an instant: the `hour` dimension. Every click
 * asks, so the answer is kept per zone for the 15-minute block of UTC it was computed in:
 * UTC offsets are whole quarter hours and offset changes happen on quarter-hour boundaries,
 * so the local hour cannot change inside such a block.
 */
const BLOCK_MS = 15 * 60_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
const cache = new Map<string, { block: number; hour: string }>();

export function localHour(ms: number, timeZone: string): string {
  const block = Math.floor(ms / BLOCK_MS);
  const cached = cache.get(timeZone);
  if (cached?.block === block) return cached.hour;
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', hour: '2-digit' });
    formatters.set(timeZone, format);
  }
  const hour = format.format(ms).padStart(2, '0');
  cache.set(timeZone, { block, hour });
  return hour;
}
