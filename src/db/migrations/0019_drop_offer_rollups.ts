import type { Kysely } from 'kysely';

/**
 * The per-offer rollups of 0002 (and their slots, 0011) are gone: since 0014 every click and
 * conversion change is counted once, as a fact folded into analytics_rollups, which reports
 * and the dashboard read. Writing both cost every click and conversion a second set of
 * upserts on the hot path.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('rollups_offer_partner').execute();
  await db.schema.dropTable('rollups_offer').execute();
}
