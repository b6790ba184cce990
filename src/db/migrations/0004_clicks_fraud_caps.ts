import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('clicks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('user_agent', 'text')
    .addColumn('referer', 'text')
    .addColumn('sub1', 'text')
    .addColumn('sub2', 'text')
    .addColumn('sub3', 'text')
    .addColumn('sub4', 'text')
    .addColumn('sub5', 'text')
    .addColumn('fraud_score', 'integer', (c) => c.notNull())
    .addColumn('fraud_signals', 'text', (c) => c.notNull())
    .addColumn('high_risk', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('clicks_brand_idx').on('clicks').columns(['brand_id', 'id']).execute();
  // Velocity: recent clicks of one IP on one offer.
  await db.schema.createIndex('clicks_velocity_idx').on('clicks').columns(['offer_id', 'ip', 'created_at']).execute();
  // Automation bans: recent high-risk clicks of one partner.
  await db.schema
    .createIndex('clicks_partner_risk_idx')
    .on('clicks')
    .columns(['partner_id', 'high_risk', 'created_at'])
    .execute();

  await db.schema
    .createTable('fraud_blocklist')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('fraud_blocklist_brand_idx').on('fraud_blocklist').columns(['brand_id', 'id']).execute();

  // Conversions counted per offer, cap and period (period_start 0 for the global cap).
  await db.schema
    .createTable('cap_counters')
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('cap', 'text', (c) => c.notNull())
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('cap_counters_pk', ['offer_id', 'cap', 'period_start'])
    .execute();
  // One row per cap.reached fired: the primary key makes "once per cap and period" hold
  // even when a rejection lowers the count and a later conversion reaches it again.
  await db.schema
    .createTable('cap_notifications')
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('cap', 'text', (c) => c.notNull())
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('cap_notifications_pk', ['offer_id', 'cap', 'period_start'])
    .execute();
}
