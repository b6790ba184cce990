import type { Kysely } from 'kysely';

/**
 * Indexes for dashboard filters that otherwise read a brand's whole table to find a few rows
 * (measured by `npm run bench dashboard` with a million deliveries and clicks):
 * - the delivery log by event type: a rare event (`partner.banned`) meant scanning every
 *   delivery of the brand — seconds;
 * - the clicks of one partner, newest first;
 * - conversions of one offer, of one partner (the list, and the partner balances on the
 *   partners list), and a search by transaction id (the unique index starts with the offer,
 *   which the search does not know).
 * Column order matters on SQLite, which plans without statistics (nothing runs ANALYZE):
 * it takes an equality on any index as very selective, so an index starting with brand_id
 * and no order would be picked for brand-wide queries too (and read every row); these lead
 * with the filtered column, or end with id so the newest-first order needs no sort.
 * Each costs one index entry per delivery, click or conversion written.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_brand_event_idx')
    .ifNotExists()
    .on('webhook_deliveries')
    .columns(['brand_id', 'event', 'id'])
    .execute();
  await db.schema
    .createIndex('clicks_brand_partner_idx')
    .ifNotExists()
    .on('clicks')
    .columns(['brand_id', 'partner_id', 'id'])
    .execute();
  await db.schema
    .createIndex('conversions_offer_brand_idx')
    .ifNotExists()
    .on('conversions')
    .columns(['offer_id', 'brand_id', 'id'])
    .execute();
  // Also covers the partner balances of the partners list (status, currency, payout of every
  // conversion of 50 partners), so those are read from the index alone.
  await db.schema
    .createIndex('conversions_partner_brand_idx')
    .ifNotExists()
    .on('conversions')
    .columns(['partner_id', 'brand_id', 'id', 'status', 'currency', 'payout_cents'])
    .execute();
  await db.schema
    .createIndex('conversions_txn_brand_idx')
    .ifNotExists()
    .on('conversions')
    .columns(['external_txn_id', 'brand_id', 'id'])
    .execute();
}
