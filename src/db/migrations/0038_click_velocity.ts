import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * The velocity signal's count on PostgreSQL (fraud/velocity.ts): one row per offer and IP,
 * holding the times of the IP's last clicks on the offer. Clicks of several processes, or
 * of several batches in flight, register in it with an upsert and so queue on its row: each
 * sees every click registered before it, which a count of the clicks table cannot see until
 * they commit.
 *
 * UNLOGGED: a row is rebuilt from the clicks table when it is missing (the upsert seeds a
 * new row from the IP's recent clicks), so losing the table in a crash costs nothing, and
 * the table's writes skip the WAL. SQLite never needs it: its one writer serialises every
 * click, and the count of the clicks table is exact there.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.schema
    .createTable('click_velocity')
    .modifyFront(sql`unlogged`)
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('ip', 'text', (c) => c.notNull())
    // The times (epoch ms) of the last clicks registered before the latest statement's, and
    // of that statement's own, five at most each: only "at least five in the window" matters.
    .addColumn('earlier', sql`bigint[]`, (c) => c.notNull())
    .addColumn('latest', sql`bigint[]`, (c) => c.notNull())
    .addPrimaryKeyConstraint('click_velocity_pkey', ['offer_id', 'ip'])
    .execute();
  // No index on the times: the table holds the keys of the last minutes only, the sweep
  // that reads it runs about once a minute, and without one every registration is a HOT update.
}
