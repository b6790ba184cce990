import { type Kysely, sql } from 'kysely';

/**
 * Indexes for the dashboard's filters, so its pages stay fast with millions of deliveries
 * and clicks:
 * - the delivery log by status, and the Overview's failing subscriptions (failed or
 *   retrying, bounded by id = time), read one status's rows of one brand, newest first;
 * - the Overview's and Clicks page's high-risk clicks: partial, so it holds only the few
 *   risky clicks and costs an ordinary click nothing;
 * - a partner's numbers read its rollup rows by partner and day, not every partner's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_brand_status_idx')
    .on('webhook_deliveries')
    .columns(['brand_id', 'status', 'id'])
    .execute();
  await db.schema
    .createIndex('clicks_brand_high_risk_idx')
    .on('clicks')
    .columns(['brand_id', 'id'])
    .where(sql.ref('high_risk'), '=', 1)
    .execute();
  await db.schema
    .createIndex('rollups_offer_partner_partner_idx')
    .on('rollups_offer_partner')
    .columns(['brand_id', 'partner_id', 'day'])
    .execute();
}
