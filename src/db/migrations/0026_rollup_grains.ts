/**
 * Reports at scale (issue #15, "speed at scale"): analytics_rollups gets the grains of
 * modules/analytics/grains.ts. At a million clicks a report by partner read every offer's
 * rows of each partner (level 2: 20 offers, 20 times the rows), a partner's report read every
 * partner's rows of the days, and six of the table's seven million rows were per offer and
 * partner per attribute value — about one per fact and attribute, for reports of three
 * dimensions, which now read the facts. So:
 *
 * - level 3 (per partner, offer_id '*') is added, summed from the level-2 rows;
 * - level 2 keeps its rows without attribute (dimension ''): offer × partner reports and the
 *   dashboard's partner numbers;
 * - a `span` column: 1 for a day's row, 7 for a Monday-to-Sunday week's row keyed by its
 *   Monday; week rows are added at level 0, summed from its day rows;
 * - on SQLite the table is WITHOUT ROWID, so a range of the key is read in place: with a
 *   rowid table every row read through the key cost a second lookup in the table (a 60,000-
 *   row report: 49 ms of CPU instead of 9 to read its rows);
 * - indexes by value, by offer and by partner: a report filtered on one of them reads its
 *   rows, not every row of the days (migration 0022's partial index by partner, for the
 *   dashboard's partner numbers, is one case of the partner index and goes with the old
 *   table).
 *
 * The table is rebuilt (a new key cannot be added in place on SQLite), in key order.
 */
import { type CreateTableBuilder, type Kysely, PostgresAdapter, sql } from 'kysely';

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;
const KEY = ['brand_id', 'dimension', 'level', 'span', 'day', 'offer_id', 'partner_id', 'value', 'currency'];

export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // Typed by name only: the counter columns are added in a loop.
  let table: CreateTableBuilder<string, string> = db.schema
    .createTable('analytics_rollups_grains')
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('dimension', 'text', (c) => c.notNull())
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('span', 'integer', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull());
  for (const counter of COUNTERS) table = table.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
  // The key's constraint keeps a name of its own: the old table's is in use until it is dropped.
  table = table.addPrimaryKeyConstraint('analytics_rollups_grain_pk', KEY);
  await (postgres ? table : table.modifyEnd(sql`without rowid`)).execute();

  const columns = sql.join([...KEY, ...COUNTERS].map((c) => sql.ref(c)));
  const sums = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  const counters = sql.join(COUNTERS.map((c) => sql.ref(c)));
  // Levels 0 and 1 as they are, level 2 without attribute: day rows.
  await sql`
    insert into analytics_rollups_grains (${columns})
    select brand_id, dimension, level, 1, day, offer_id, partner_id, value, currency, ${counters}
    from analytics_rollups where level < 2 or (level = 2 and dimension = '')
    order by brand_id, dimension, level, day, offer_id, partner_id, value, currency`.execute(db);
  // Level 3: a partner's rows summed over its offers.
  await sql`
    insert into analytics_rollups_grains (${columns})
    select brand_id, dimension, 3, 1, day, '*', partner_id, value, currency, ${sums}
    from analytics_rollups where level = 2
    group by brand_id, dimension, day, partner_id, value, currency
    order by brand_id, dimension, day, partner_id, value, currency`.execute(db);
  // Level 0's weeks (see bulkFold.ts for the two spellings of "the Monday of day's week").
  const week = postgres
    ? sql`to_char(date_trunc('week', day::date), 'YYYY-MM-DD')`
    : sql`date(day, 'weekday 0', '-6 days')`;
  await sql`
    insert into analytics_rollups_grains (${columns})
    select brand_id, dimension, 0, 7, ${week}, '*', '*', value, currency, ${sums}
    from analytics_rollups where level = 0
    group by brand_id, dimension, ${week}, value, currency
    order by brand_id, dimension, ${week}, value, currency`.execute(db);

  await db.schema.dropTable('analytics_rollups').execute();
  await db.schema.alterTable('analytics_rollups_grains').renameTo('analytics_rollups').execute();
  // Each one is the key with the filtered column moved before the span and day, so a filtered
  // report is one range of it — and, with one equality more than the key, the index SQLite
  // picks without statistics.
  for (const [name, column] of [
    ['analytics_rollups_value_idx', 'value'],
    ['analytics_rollups_offer_idx', 'offer_id'],
    ['analytics_rollups_partner_idx', 'partner_id'],
  ] as const) {
    await db.schema
      .createIndex(name)
      .on('analytics_rollups')
      .columns(['brand_id', 'dimension', 'level', column, 'span', 'day'])
      .execute();
  }
  // PostgreSQL plans reports by its statistics, which a new table has none of until
  // autovacuum comes by.
  if (postgres) await sql`analyze analytics_rollups`.execute(db);
}
