/**
 * Reports over two attributes at once (issue #15, "speed at scale"): `country=DE` split by
 * `deviceType`, or `groupBy=os,browser`, grouped the facts of their days — seconds at a
 * million clicks. The attributes whose values come from a fixed vocabulary (country,
 * device type, OS, browser, hour) now also get their joint counts per pair and brand-local
 * day, summed over all offers and partners: at most a few thousand rows a day whatever the
 * traffic, folded by the same job as the single-attribute rollups (fold.ts).
 *
 * `pair` names the two attributes in the order of `ATTRIBUTES` (`country,deviceType`);
 * `first` and `second` are their values ('' = none). The day comes before the values in the
 * key, so a report's day range is one index range.
 */
import { type CreateTableBuilder, type Kysely, sql } from 'kysely';

/** The pairs at the time of this migration; later changes to the list need their own backfill. */
const PAIRED = [
  ['country', 'country'],
  ['deviceType', 'device_type'],
  ['os', 'os'],
  ['browser', 'browser'],
  ['hour', 'hour'],
] as const;
const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Typed by name only: the counter columns are added in a loop.
  let table: CreateTableBuilder<string, string> = db.schema
    .createTable('analytics_pair_rollups')
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('pair', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('first', 'text', (c) => c.notNull())
    .addColumn('second', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull());
  for (const counter of COUNTERS) table = table.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
  await table
    .addPrimaryKeyConstraint('analytics_pair_rollups_pk', ['brand_id', 'pair', 'day', 'first', 'second', 'currency'])
    .execute();

  // The facts folded before this migration, paired; facts not folded yet are paired by the fold.
  const sums = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  for (let a = 0; a < PAIRED.length; a++) {
    for (let b = a + 1; b < PAIRED.length; b++) {
      const [nameA, columnA] = PAIRED[a] as (typeof PAIRED)[number];
      const [nameB, columnB] = PAIRED[b] as (typeof PAIRED)[number];
      const first = sql`coalesce(${sql.ref(columnA)}, '')`;
      const second = sql`coalesce(${sql.ref(columnB)}, '')`;
      await sql`
        insert into analytics_pair_rollups (brand_id, pair, day, first, second, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select brand_id, ${`${nameA},${nameB}`}, day, ${first}, ${second}, currency, ${sums}
        from analytics_facts where folded = 1
        group by brand_id, day, ${first}, ${second}, currency`.execute(db);
    }
  }
}
