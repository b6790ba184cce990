import { type Kysely, sql } from 'kysely';

/**
 * The automation rule's count (a partner's high-risk clicks in a window, clicks/service.ts)
 * is the only reader of the (partner_id, high_risk, created_at) index, and it reads
 * high-risk clicks only; yet every click paid an entry in it — a ninth b-tree per click
 * and about a tenth of the pages a group commit writes. Partial now, it holds only the few
 * high-risk clicks, like clicks_brand_high_risk_idx (0017); the count repeats the condition
 * literally so SQLite can match it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('clicks_partner_risk_idx').execute();
  await db.schema
    .createIndex('clicks_partner_high_risk_idx')
    .on('clicks')
    .columns(['partner_id', 'created_at'])
    .where(sql.ref('high_risk'), '=', 1)
    .execute();
}
