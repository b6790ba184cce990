/**
 * The pair rollups get week rows as analytics_rollups did in 0026: a `span` column (1 for a
 * day's row, 7 for a Monday-to-Sunday week's row keyed by its Monday) in the key, the weeks
 * summed from the day rows. A pair with many values per day — country × hour, ~2,300 rows a
 * day at a million clicks a month — read 69,000 rows for 30 days; with weeks ~10 rows per
 * pair of values. On SQLite the table is WITHOUT ROWID, so a range of the key is read in
 * place (see 0026). Rebuilt, in key order.
 */
import { type CreateTableBuilder, type Kysely, PostgresAdapter, sql } from 'kysely';

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;
const KEY = ['brand_id', 'pair', 'span', 'day', 'first', 'second', 'currency'];

export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // Typed by name only: the counter columns are added in a loop.
  let table: CreateTableBuilder<string, string> = db.schema
    .createTable('analytics_pair_rollups_weeks')
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('pair', 'text', (c) => c.notNull())
    .addColumn('span', 'integer', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('first', 'text', (c) => c.notNull())
    .addColumn('second', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull());
  for (const counter of COUNTERS) table = table.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
  // The key's constraint keeps a name of its own: the old table's is in use until it is dropped.
  table = table.addPrimaryKeyConstraint('analytics_pair_rollups_span_pk', KEY);
  await (postgres ? table : table.modifyEnd(sql`without rowid`)).execute();

  const columns = sql.join([...KEY, ...COUNTERS].map((c) => sql.ref(c)));
  const counters = sql.join(COUNTERS.map((c) => sql.ref(c)));
  const sums = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  await sql`
    insert into analytics_pair_rollups_weeks (${columns})
    select brand_id, pair, 1, day, first, second, currency, ${counters}
    from analytics_pair_rollups
    order by brand_id, pair, day, first, second, currency`.execute(db);
  // The Monday of a day's week: see modules/analytics/bulkFold.ts for the two spellings.
  const week = postgres
    ? sql`to_char(date_trunc('week', day::date), 'YYYY-MM-DD')`
    : sql`date(day, 'weekday 0', '-6 days')`;
  await sql`
    insert into analytics_pair_rollups_weeks (${columns})
    select brand_id, pair, 7, ${week}, first, second, currency, ${sums}
    from analytics_pair_rollups
    group by brand_id, pair, ${week}, first, second, currency
    order by brand_id, pair, ${week}, first, second, currency`.execute(db);

  await db.schema.dropTable('analytics_pair_rollups').execute();
  await db.schema.alterTable('analytics_pair_rollups_weeks').renameTo('analytics_pair_rollups').execute();
  // PostgreSQL plans reports by its statistics, which a new table has none of until
  // autovacuum comes by.
  if (postgres) await sql`analyze analytics_pair_rollups`.execute(db);
}
