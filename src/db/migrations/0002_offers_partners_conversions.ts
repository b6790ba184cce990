import type { CreateTableBuilder, Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('offers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('destination_url', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('revenue_cents', 'bigint', (c) => c.notNull())
    .addColumn('payout_cents', 'bigint', (c) => c.notNull())
    .addColumn('conversion_status', 'text', (c) => c.notNull())
    .addColumn('hold_seconds', 'integer')
    .addColumn('cap_daily', 'integer')
    .addColumn('cap_weekly', 'integer')
    .addColumn('cap_monthly', 'integer')
    .addColumn('cap_global', 'integer')
    .addColumn('fallback_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('offers_brand_idx').on('offers').columns(['brand_id', 'id']).execute();

  await db.schema
    .createTable('partners')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('website', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('ban_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('approved_at', 'bigint')
    .addColumn('banned_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('partners_brand_idx').on('partners').columns(['brand_id', 'id']).execute();
  await db.schema
    .createIndex('partners_brand_status_idx')
    .on('partners')
    .columns(['brand_id', 'status', 'id'])
    .execute();

  await db.schema
    .createTable('conversions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('offer_id', 'text', (c) => c.notNull().references('offers.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('click_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('revenue_cents', 'bigint', (c) => c.notNull())
    .addColumn('payout_cents', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('sub1', 'text')
    .addColumn('sub2', 'text')
    .addColumn('sub3', 'text')
    .addColumn('sub4', 'text')
    .addColumn('sub5', 'text')
    .addColumn('external_txn_id', 'text')
    .addColumn('cap_exceeded', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('hold_until', 'bigint')
    .addColumn('approved_at', 'bigint')
    .addColumn('approved_by', 'text')
    .addColumn('rejected_at', 'bigint')
    .addColumn('rejection_reason', 'text')
    .addColumn('local_day', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The duplicate rule is enforced here, not by a read-then-write: concurrent postbacks
  // with one externalTxnId can only ever insert one row (NULLs never collide).
  await db.schema
    .createIndex('conversions_offer_txn_uq')
    .on('conversions')
    .columns(['offer_id', 'external_txn_id'])
    .unique()
    .execute();
  await db.schema.createIndex('conversions_brand_idx').on('conversions').columns(['brand_id', 'id']).execute();
  await db.schema
    .createIndex('conversions_brand_status_idx')
    .on('conversions')
    .columns(['brand_id', 'status', 'id'])
    .execute();
  await db.schema.createIndex('conversions_hold_idx').on('conversions').columns(['status', 'hold_until']).execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_brand_idx').on('events').columns(['brand_id', 'id']).execute();

  // Report rollups, maintained in the same transaction as every conversion change: one
  // row per brand-local day × offer × partner, and a coarser day × offer table so reports
  // that do not involve partners read a few rows per day instead of hundreds.
  for (const [table, keys] of [
    ['rollups_offer_partner', ['brand_id', 'day', 'offer_id', 'partner_id']],
    ['rollups_offer', ['brand_id', 'day', 'offer_id']],
  ] as const) {
    // Typed by name only: which key columns it gets depends on the table.
    let builder: CreateTableBuilder<string, string> = db.schema
      .createTable(table)
      .addColumn('brand_id', 'text', (c) => c.notNull());
    builder = builder.addColumn('day', 'text', (c) => c.notNull()).addColumn('offer_id', 'text', (c) => c.notNull());
    if (keys.length === 4) builder = builder.addColumn('partner_id', 'text', (c) => c.notNull());
    await builder
      .addColumn('clicks', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('pending', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('approved', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('rejected', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('revenue_cents', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('payout_cents', 'bigint', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint(`${table}_pk`, [...keys])
      .execute();
  }
}
