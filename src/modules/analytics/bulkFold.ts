/**
 * The fold as one SQL statement per dimension and grain (and per pair and span), for data
 * loaded in bulk (the benchmarks' million clicks, an import): the same sums `foldBatch`
 * adds, computed by the database. Only for facts of `brandId` not folded yet and rollups
 * not written yet.
 */
import { PostgresAdapter, type RawBuilder, sql } from 'kysely';
import type { Trx } from '../../db/database.js';
import { ATTRIBUTE_COLUMN, ATTRIBUTES, PAIRS } from './dimensions.js';
import {
  ALL,
  DAY_SPAN,
  LEVEL_ALL,
  LEVEL_OFFER,
  LEVEL_OFFER_PARTNER,
  LEVEL_PARTNER,
  type Level,
  WEEK_SPAN,
} from './grains.js';

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;

/**
 * The Monday of a fact's week, as `YYYY-MM-DD`, in SQL: SQLite moves to the week's Sunday
 * (or stays on it) and back six days; PostgreSQL's ISO weeks start on Monday.
 */
function weekOfDay(postgres: boolean): RawBuilder<string> {
  return postgres ? sql`to_char(date_trunc('week', day::date), 'YYYY-MM-DD')` : sql`date(day, 'weekday 0', '-6 days')`;
}

interface Grain {
  level: Level;
  span: number;
  day: RawBuilder<string>;
  offer: RawBuilder<unknown>;
  partner: RawBuilder<unknown>;
  /** The columns grouped by besides the day and the value. */
  keys: string[];
  /** Written without attribute only (level 2). */
  bare?: boolean;
}

export async function rollUpLoadedFacts(trx: Trx, brandId: string): Promise<void> {
  const postgres = trx.getExecutor().adapter instanceof PostgresAdapter;
  const counters = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  const day = sql<string>`day`;
  const week = weekOfDay(postgres);
  const grains: Grain[] = [
    { level: LEVEL_ALL, span: DAY_SPAN, day, offer: sql`${ALL}`, partner: sql`${ALL}`, keys: [] },
    { level: LEVEL_ALL, span: WEEK_SPAN, day: week, offer: sql`${ALL}`, partner: sql`${ALL}`, keys: [] },
    { level: LEVEL_OFFER, span: DAY_SPAN, day, offer: sql.ref('offer_id'), partner: sql`${ALL}`, keys: ['offer_id'] },
    {
      level: LEVEL_OFFER_PARTNER,
      span: DAY_SPAN,
      day,
      offer: sql.ref('offer_id'),
      partner: sql.ref('partner_id'),
      keys: ['offer_id', 'partner_id'],
      bare: true,
    },
    {
      level: LEVEL_PARTNER,
      span: DAY_SPAN,
      day,
      offer: sql`${ALL}`,
      partner: sql.ref('partner_id'),
      keys: ['partner_id'],
    },
  ];
  for (const dimension of ['', ...ATTRIBUTES] as const) {
    const value = dimension === '' ? sql`''` : sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[dimension])}, '')`;
    for (const grain of grains) {
      if (grain.bare && dimension !== '') continue;
      // PostgreSQL refuses a constant in GROUP BY: the '' dimension groups without its value.
      const values = dimension === '' ? [] : [value];
      const groupBy = sql.join([grain.day, ...grain.keys.map((k) => sql.ref(k)), ...values, sql.ref('currency')]);
      await sql`
        insert into analytics_rollups (brand_id, dimension, level, span, day, offer_id, partner_id, value, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select ${brandId}, ${dimension}, ${grain.level}, ${grain.span}, ${grain.day}, ${grain.offer}, ${grain.partner},
          ${value}, currency, ${counters}
        from analytics_facts where brand_id = ${brandId} and folded = 0
        group by ${groupBy}`.execute(trx);
    }
  }
  for (const [a, b] of PAIRS) {
    const first = sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[a])}, '')`;
    const second = sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[b])}, '')`;
    for (const [span, spanDay] of [
      [DAY_SPAN, day],
      [WEEK_SPAN, week],
    ] as const) {
      await sql`
        insert into analytics_pair_rollups (brand_id, pair, span, day, first, second, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select ${brandId}, ${`${a},${b}`}, ${span}, ${spanDay}, ${first}, ${second}, currency, ${counters}
        from analytics_facts where brand_id = ${brandId} and folded = 0
        group by ${spanDay}, ${first}, ${second}, currency`.execute(trx);
    }
  }
  await sql`update analytics_facts set folded = 1 where brand_id = ${brandId} and folded = 0`.execute(trx);
}
