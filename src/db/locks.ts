/**
 * Row locks for read-modify-write updates (a metadata merge reads the stored keys, adds the
 * patch's and writes them back). On PostgreSQL two such transactions under READ COMMITTED
 * would both read the old keys and the later write would drop the earlier one's: the row is
 * locked before it is read. SQLite's write transactions run one at a time: nothing to lock.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { Trx } from './types.js';

/** Tables whose rows are changed by read-modify-write. */
type LockedTable = 'offers' | 'partners' | 'webhook_subscriptions';

/** Locks the row `id` of `table` until the transaction ends (PostgreSQL; a no-op on SQLite). */
export async function lockRowForUpdate(trx: Trx, table: LockedTable, id: string): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`select 1 from ${sql.table(table)} where id = ${id} for update`.execute(trx);
}
