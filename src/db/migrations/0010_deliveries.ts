import type { Kysely } from 'kysely';

/**
 * The delivery engine's bookkeeping (modules/deliveries):
 * - `unrecorded_sends`: sends of a delivery since its last recorded attempt. A send whose
 *   outcome cannot be written (storage refuses it, the process dies mid-send) leaves the
 *   delivery to be sent again when its lease ends; this count caps that loop, so no delivery
 *   is resent without end.
 * - `delivery_workers`: one row per running dispatcher with its last heartbeat. A lease held
 *   by a worker whose heartbeat stopped is taken over at once, so a killed worker's
 *   deliveries are sent within seconds of it dying, not when the lease time runs out; a slow
 *   but living worker keeps its leases.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('unrecorded_sends', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('delivery_workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .execute();
}
