import type { Kysely } from 'kysely';

/**
 * Indexes for dashboard filters that otherwise read a brand's whole table to find a few rows
 * (measured by `npm run bench dashboard` with a million deliveries and clicks):
 * - the delivery log by event type: a rare event (`partner.banned`) meant scanning every
 *   delivery of the brand — seconds;
 * - the clicks of one partner, newest first: the planner walked the brand's clicks by id
 *   (or the high-risk ones) fetching each row to test the partner;
 * - a search by transaction id on the conversions page (the unique index starts with the
 *   offer, which the search does not know).
 * Each costs one index entry per delivery, click or conversion written.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_brand_event_idx')
    .on('webhook_deliveries')
    .columns(['brand_id', 'event', 'id'])
    .execute();
  await db.schema
    .createIndex('clicks_brand_partner_idx')
    .on('clicks')
    .columns(['brand_id', 'partner_id', 'id'])
    .execute();
  await db.schema
    .createIndex('conversions_brand_txn_idx')
    .on('conversions')
    .columns(['brand_id', 'external_txn_id'])
    .execute();
}
