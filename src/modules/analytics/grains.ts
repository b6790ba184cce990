/**
 * The grains of the rollup rows: which offers and partners a row sums (its level) and how
 * many days (its span). Shared by the fold that writes them and the reports that read them.
 *
 * Levels of analytics_rollups ('*' in offer_id / partner_id sums every offer / partner):
 * - 0: all offers and partners, every attribute;
 * - 1: per offer, every attribute;
 * - 2: per offer and partner, without attribute only (dimension ''): with an attribute these
 *   rows were about one per fact per attribute (~6 of the 7 million rows at a million
 *   clicks), for reports of three dimensions, which read the facts instead;
 * - 3: per partner, every attribute: a partner's report reads its own rows, not those of
 *   every offer it promotes (20 offers: 20 times fewer rows).
 *
 * Spans: a row sums one brand-local day (span 1), or the Monday-to-Sunday week starting on
 * `day` (span 7). Week rows exist at level 0 and for the pairs: a report over many days
 * without a time grouping reads a week's row instead of its seven days' (a 30-day range is
 * 4 weeks and the days around them: ~10 rows per value instead of 30), where the values are
 * many (sub1, referrer host, country × hour); finer levels are either small or too large
 * for this to matter (see README, "How reports stay fast").
 */
import { PostgresAdapter, type RawBuilder, sql } from 'kysely';
import { addDays, daysBetween, formatDay, mondayOf, parseDay } from '../../calendar.js';
import type { Queryable } from '../../db/database.js';

export const LEVEL_ALL = 0;
export const LEVEL_OFFER = 1;
export const LEVEL_OFFER_PARTNER = 2;
export const LEVEL_PARTNER = 3;
export type Level = 0 | 1 | 2 | 3;

export const DAY_SPAN = 1;
export const WEEK_SPAN = 7;

/** '*' in offer_id / partner_id: the row sums every offer / partner. */
export const ALL = '*';

/** The Monday (`YYYY-MM-DD`) of the week holding brand-local `day`. */
export function weekOf(day: string): string {
  return formatDay(mondayOf(parseDay(day)));
}

/** An inclusive range of `day` keys of rows of one span. */
export interface SpanRange {
  span: typeof DAY_SPAN | typeof WEEK_SPAN;
  from: string;
  to: string;
}

/**
 * The rows covering the days `from`…`to` exactly: the whole weeks inside the range as week
 * rows (keyed by their Mondays), the days before and after them as day rows.
 *
 * Compared as calendar dates, never as text: the Monday after a day of 9999's last week is
 * in year 10000, whose "10000-01-03" sorts before every four-digit year, so a text comparison
 * took it for a week inside the range and read every row up to 9999 as its weeks. Only days
 * inside the range (so four-digit years) are ever formatted into a span.
 */
export function spanRanges(from: string, to: string): SpanRange[] {
  const first = parseDay(from);
  const last = parseDay(to);
  const firstMonday = from === weekOf(from) ? first : addDays(mondayOf(first), 7);
  const lastMonday = addDays(mondayOf(addDays(last, 1)), -7);
  if (daysBetween(firstMonday, lastMonday) < 0) return [{ span: DAY_SPAN, from, to }];
  const ranges: SpanRange[] = [];
  if (daysBetween(first, firstMonday) > 0) {
    ranges.push({ span: DAY_SPAN, from, to: formatDay(addDays(firstMonday, -1)) });
  }
  ranges.push({ span: WEEK_SPAN, from: formatDay(firstMonday), to: formatDay(lastMonday) });
  const afterWeeks = addDays(lastMonday, 7);
  if (daysBetween(afterWeeks, last) >= 0) ranges.push({ span: DAY_SPAN, from: formatDay(afterWeeks), to });
  return ranges;
}

/** A column a report filters analytics_rollups on, each with an index of migration 0026. */
export type RollupFilter = 'value' | 'offer_id' | 'partner_id';
const ROLLUP_INDEXES: Record<RollupFilter, string> = {
  value: 'analytics_rollups_value_idx',
  offer_id: 'analytics_rollups_offer_idx',
  partner_id: 'analytics_rollups_partner_idx',
};

/**
 * analytics_rollups in a FROM clause, read through the index of `filter` on SQLite. Without
 * statistics (DEVELOPERS.md) SQLite prefers a range of the key — it holds the counters,
 * where the index costs a lookup per row — to the index with one more equality, and so read
 * every partner's rows of the days for one partner's report (1,063,412 rows of sub1 for
 * 30 days at a million clicks, to keep 10,579). PostgreSQL has statistics and chooses alone.
 */
export function rollupsReadBy(q: Queryable, filter: RollupFilter | undefined): RawBuilder<unknown> {
  if (filter === undefined || q.getExecutor().adapter instanceof PostgresAdapter) return sql`analytics_rollups`;
  return sql`analytics_rollups indexed by ${sql.ref(ROLLUP_INDEXES[filter])}`;
}
