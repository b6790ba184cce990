import type { Kysely } from 'kysely';

/**
 * Which cap counters a conversion incremented, so a rejection lowers exactly those — not
 * whatever the offer's caps or the brand's time zone are by the time it is rejected.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('conversions').addColumn('cap_periods', 'text').execute();
}
