import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Rate-limit windows shared by the processes of a PostgreSQL deployment without Redis (one
 * row per limited key; see http/postgresCounter.ts). UNLOGGED on PostgreSQL: a counter that
 * lives a minute needs no crash safety, and skipping the WAL spares every keyed request a
 * WAL flush. SQLite (one process) counts in memory and never uses the table; it is created
 * there too so both dialects keep one schema.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const unlogged = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('rate_limit_windows')
    .$call((table) => (unlogged ? table.modifyFront(sql`unlogged`) : table))
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('reset_at', 'bigint', (c) => c.notNull())
    .execute();
  // No index on reset_at: the table holds only the keys of the last minute or so, the sweep
  // that reads it runs about once a minute, and without one every count is a HOT update.
}
