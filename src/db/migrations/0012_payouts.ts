import type { Kysely } from 'kysely';

/**
 * Payouts: a brand pays a partner the approved conversions' payoutCents, per currency.
 *
 * - `payout_runs`: one row per (brand, upTo, partner filter): what makes `POST /payouts`
 *   idempotent. A repeat finds its run and answers with the run's payouts.
 * - `payouts`: one per partner and currency of a run.
 * - `payout_items`: the conversions a payout covers. The unique index on `conversion_id` is
 *   the rule "a conversion is never in two payouts", enforced by the database; cancelling a
 *   payout deletes its items, which makes its conversions payable again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('payout_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('up_to', 'bigint', (c) => c.notNull())
    /** The partnerId the run was limited to, or '' for every partner. */
    .addColumn('partner_filter', 'text', (c) => c.notNull())
    .addColumn('minimum_cents', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('payout_runs_key_uq')
    .on('payout_runs')
    .columns(['brand_id', 'up_to', 'partner_filter'])
    .unique()
    .execute();

  await db.schema
    .createTable('payouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('payout_runs.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('conversion_count', 'integer', (c) => c.notNull())
    .addColumn('up_to', 'bigint', (c) => c.notNull())
    .addColumn('reference', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('paid_at', 'bigint')
    .addColumn('cancelled_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payouts_brand_idx').on('payouts').columns(['brand_id', 'id']).execute();
  await db.schema.createIndex('payouts_run_idx').on('payouts').column('run_id').execute();
  await db.schema.createIndex('payouts_partner_idx').on('payouts').columns(['partner_id', 'id']).execute();

  await db.schema
    .createTable('payout_items')
    .addColumn('conversion_id', 'text', (c) => c.primaryKey().references('conversions.id'))
    .addColumn('payout_id', 'text', (c) => c.notNull().references('payouts.id'))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payout_items_payout_idx').on('payout_items').columns(['payout_id']).execute();
  // Payout runs look for approved conversions by partner; rejections look up one conversion.
  await db.schema
    .createIndex('conversions_partner_status_idx')
    .on('conversions')
    .columns(['partner_id', 'status', 'approved_at'])
    .execute();
}
