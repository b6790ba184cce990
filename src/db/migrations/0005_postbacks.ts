import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('partner_postbacks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('offer_id', 'text')
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('partner_postbacks_partner_idx')
    .on('partner_postbacks')
    .columns(['partner_id', 'id'])
    .execute();

  // Postback sends are deliveries too (kind 'postback'): the URL is filled in when the send
  // is queued, and sent with GET.
  await db.schema.alterTable('webhook_deliveries').addColumn('target_url', 'text').execute();
  await db.schema.alterTable('webhook_deliveries').addColumn('method', 'text').execute();

  await db.schema.alterTable('offers').addColumn('postback_token', 'text').execute();
  await db.schema.createIndex('offers_postback_token_uq').on('offers').column('postback_token').unique().execute();
}
