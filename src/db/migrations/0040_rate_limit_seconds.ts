import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Rate limits count per second over the last minute instead of in fixed windows
 * (http/rateLimit.ts): on PostgreSQL each key's row holds its per-second counters, newest
 * first, as an array (http/postgresCounter.ts). The old rows hold fixed-window counts that
 * mean nothing to the new rule and live a minute at most, so the table is made anew rather
 * than converted: at the upgrade every key starts its count afresh, once.
 *
 * Still UNLOGGED (see 0009). SQLite counts in memory and never used the table: it is only
 * dropped there, as 0038 keeps click_velocity on PostgreSQL alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('rate_limit_windows').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.schema
    .createTable('rate_limit_windows')
    .modifyFront(sql`unlogged`)
    .addColumn('key', 'text', (c) => c.primaryKey())
    // WINDOW_SECONDS counters: counts[i] requests in second `second - i`.
    .addColumn('counts', sql`integer[]`, (c) => c.notNull())
    // The newest counter's second (epoch seconds).
    .addColumn('second', 'bigint', (c) => c.notNull())
    // How many hits of the latest statement passed: read back by its RETURNING only.
    .addColumn('admitted', 'integer', (c) => c.notNull())
    .execute();
  // No index on `second`: as before, the sweep reads the few rows of the last minute about
  // once a minute, and without one every count is a HOT update.
}
