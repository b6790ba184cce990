import { type Kysely, sql } from 'kysely';

/**
 * A partner's numbers on the dashboard (the partners list, a partner's page) sum its rollup
 * rows per offer and day (level 2, no attribute). The primary key puts the day before the
 * partner, so without this index the query read every partner's rows of the range — 300,000
 * rows for 500 partners × 20 offers × 30 days — to keep one partner's. Partial, so it holds
 * only those rows (a fraction of the rollups) and the attribute rollups cost nothing more.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('analytics_rollups_partner_idx')
    .on('analytics_rollups')
    .columns(['brand_id', 'partner_id', 'day'])
    .where((eb) => eb.and([eb(sql.ref('dimension'), '=', ''), eb(sql.ref('level'), '=', 2)]))
    .execute();
}
