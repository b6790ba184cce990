/**
 * The fold job: claims facts not folded yet, sums them per attribute value at three levels
 * (all offers and partners, per offer, per offer and partner) and adds the sums to
 * analytics_rollups, in one transaction that also marks the facts folded. Summing a batch in
 * memory first turns thousands of facts into a few hundred upserts, which is why clicks
 * append a fact instead of updating a dozen rollup rows on the tracking link.
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import type { AnalyticsRollupTable } from '../../db/schema.js';
import { ATTRIBUTE_COLUMN, ATTRIBUTES } from './dimensions.js';
import type { FactRow } from './facts.js';

/**
 * Facts per transaction: on SQLite the fold holds the only write lock, so a batch must stay
 * short (a few ms) or the tracking link would wait behind it.
 */
export const FOLD_BATCH = 500;
/**
 * How often the worker folds. Reports are exact either way (they add the unfolded facts);
 * folding often keeps that tail, which reports scan, to about a second of traffic.
 */
export const FOLD_INTERVAL_MS = 1000;
/** Rollup rows per INSERT statement (13 parameters each, far below either dialect's limit). */
const UPSERT_CHUNK = 200;
/** '*' in offer_id / partner_id: the row sums every offer / partner. */
export const ALL = '*';

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;

type Rollup = AnalyticsRollupTable;

function addFact(sums: Map<string, Rollup>, fact: FactRow): void {
  const levels: Array<[number, string, string]> = [
    [0, ALL, ALL],
    [1, fact.offer_id, ALL],
    [2, fact.offer_id, fact.partner_id],
  ];
  const dimensions: Array<[string, string | null]> = [
    ['', ''],
    ...ATTRIBUTES.map((a) => [a, fact[ATTRIBUTE_COLUMN[a]]] as [string, string | null]),
  ];
  for (const [level, offerId, partnerId] of levels) {
    for (const [dimension, value] of dimensions) {
      const row: Rollup = {
        brand_id: fact.brand_id,
        dimension,
        level,
        value: value ?? '',
        day: fact.day,
        offer_id: offerId,
        partner_id: partnerId,
        currency: fact.currency,
        clicks: 0,
        pending: 0,
        approved: 0,
        rejected: 0,
        revenue_cents: 0,
        payout_cents: 0,
      };
      const key = JSON.stringify([
        row.brand_id,
        row.dimension,
        level,
        row.day,
        row.offer_id,
        row.partner_id,
        row.value,
        row.currency,
      ]);
      const sum = sums.get(key) ?? row;
      for (const counter of COUNTERS) sum[counter] += Number(fact[counter]);
      sums.set(key, sum);
    }
  }
}

async function claimFacts(trx: Trx, dialect: 'sqlite' | 'postgres'): Promise<FactRow[]> {
  // SKIP LOCKED lets several PostgreSQL workers fold at once, each its own facts; SQLite
  // has one writer at a time anyway.
  const lock = dialect === 'postgres' ? sql`for update skip locked` : sql``;
  const result = await sql<FactRow>`
    update analytics_facts set folded = 1
    where id in (select id from analytics_facts where folded = 0 order by id limit ${FOLD_BATCH} ${lock})
    returning *`.execute(trx);
  return result.rows;
}

async function upsertRollups(trx: Trx, rows: Rollup[]): Promise<void> {
  for (let i = 0; i < rows.length; i += UPSERT_CHUNK) {
    await trx
      .insertInto('analytics_rollups')
      .values(rows.slice(i, i + UPSERT_CHUNK))
      .onConflict((oc) =>
        oc
          .columns(['brand_id', 'dimension', 'level', 'day', 'offer_id', 'partner_id', 'value', 'currency'])
          .doUpdateSet(
            Object.fromEntries(
              COUNTERS.map((c) => [c, sql`${sql.ref(`analytics_rollups.${c}`)} + ${sql.ref(`excluded.${c}`)}`]),
            ),
          ),
      )
      .execute();
  }
}

/** Folds one batch; returns how many facts it folded. */
export async function foldBatch(ctx: AppContext): Promise<number> {
  return ctx.db.transact(async (trx) => {
    const facts = await claimFacts(trx, ctx.db.dialect);
    if (facts.length === 0) return 0;
    const sums = new Map<string, Rollup>();
    for (const fact of facts) addFact(sums, fact);
    // One order for every worker: two PostgreSQL folds upserting the same rows lock them in
    // the same sequence and cannot deadlock.
    const rows = [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    await upsertRollups(trx, rows);
    return facts.length;
  });
}

/** Folds until no fact is left (the worker's periodic step; tests and benchmarks call it too). */
export async function foldFacts(ctx: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const folded = await foldBatch(ctx);
    total += folded;
    if (folded < FOLD_BATCH) return total;
  }
}

/**
 * The fold as one SQL statement per dimension and level, for data loaded in bulk (the
 * benchmark's million clicks, an import): the same sums `foldBatch` adds, computed by the
 * database. Only for facts of `brandId` not folded yet and rollups not written yet.
 */
export async function rollUpLoadedFacts(trx: Trx, brandId: string): Promise<void> {
  const counters = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  const levels = [
    { level: 0, offer: sql`${ALL}`, partner: sql`${ALL}`, keys: [] as string[] },
    { level: 1, offer: sql.ref('offer_id'), partner: sql`${ALL}`, keys: ['offer_id'] },
    { level: 2, offer: sql.ref('offer_id'), partner: sql.ref('partner_id'), keys: ['offer_id', 'partner_id'] },
  ];
  for (const dimension of ['', ...ATTRIBUTES] as const) {
    const value = dimension === '' ? sql`''` : sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[dimension])}, '')`;
    for (const { level, offer, partner, keys } of levels) {
      // PostgreSQL refuses a constant in GROUP BY (the '' of the no-attribute rows): only a
      // column expression is grouped by.
      const valueKey = dimension === '' ? [] : [value];
      const groupBy = sql.join([sql.ref('day'), ...keys.map((k) => sql.ref(k)), ...valueKey, sql.ref('currency')]);
      await sql`
        insert into analytics_rollups (brand_id, dimension, level, day, offer_id, partner_id, value, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select ${brandId}, ${dimension}, ${level}, day, ${offer}, ${partner}, ${value}, currency, ${counters}
        from analytics_facts where brand_id = ${brandId} and folded = 0
        group by ${groupBy}`.execute(trx);
    }
  }
  await sql`update analytics_facts set folded = 1 where brand_id = ${brandId} and folded = 0`.execute(trx);
}
