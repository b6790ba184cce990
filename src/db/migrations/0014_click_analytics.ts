/**
 * Click analytics (issue #15): the enrichment of clicks (country, device, OS, browser,
 * referrer host), copied to the conversions attributed to them; the fact table every click
 * and conversion change appends to in its own transaction; and the per-dimension rollups a
 * background job folds those facts into (see modules/analytics/).
 */
import { type Kysely, PostgresAdapter, sql } from 'kysely';

const ENRICHMENT = ['country', 'device_type', 'os', 'browser', 'referrer_host'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['clicks', 'conversions'] as const) {
    for (const column of ENRICHMENT) await db.schema.alterTable(table).addColumn(column, 'text').execute();
  }
  // Brand-local hour of day ('00'–'23') at creation: the `hour` dimension of a conversion.
  await db.schema.alterTable('conversions').addColumn('local_hour', 'text').execute();

  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  let facts = db.schema
    .createTable('analytics_facts')
    .addColumn('id', postgres ? 'bigserial' : 'integer', (c) =>
      postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('hour', 'text')
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull());
  for (const column of [...ENRICHMENT, 'sub1', 'sub2', 'sub3', 'sub4', 'sub5']) {
    facts = facts.addColumn(column, 'text');
  }
  for (const counter of ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents']) {
    facts = facts.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
  }
  await facts.addColumn('folded', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  // Reports over several attributes at once read the facts of a brand's days.
  await db.schema
    .createIndex('analytics_facts_brand_day_idx')
    .on('analytics_facts')
    .columns(['brand_id', 'day'])
    .execute();
  // The fold job's queue, and the not-yet-folded tail every rollup report adds.
  await db.schema
    .createIndex('analytics_facts_unfolded_idx')
    .on('analytics_facts')
    .column('id')
    .where(sql.ref('folded'), '=', 0)
    .execute();

  // One row per brand, attribute (dimension '' = none), value ('' = none), brand-local day,
  // offer, partner and currency, at three levels: 0 sums all offers and partners (offer_id
  // and partner_id '*'), 1 is per offer (partner_id '*'), 2 per offer and partner. A report
  // not split by partner reads level 0 or 1: a few rows per day. The level comes before the
  // day in the key so each level's day range is one index range.
  let rollups = db.schema
    .createTable('analytics_rollups')
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('dimension', 'text', (c) => c.notNull())
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull());
  for (const counter of ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents']) {
    rollups = rollups.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
  }
  await rollups
    .addPrimaryKeyConstraint('analytics_rollups_pk', [
      'brand_id',
      'dimension',
      'level',
      'day',
      'offer_id',
      'partner_id',
      'value',
      'currency',
    ] as never[])
    .execute();

  // History recorded before this migration becomes facts without attributes: clicks from the
  // daily rollups (in their offer's currency), conversions with their own currency and subs.
  await sql`
    insert into analytics_facts (brand_id, day, offer_id, partner_id, currency, clicks)
    select r.brand_id, r.day, r.offer_id, r.partner_id, o.currency, r.clicks
    from rollups_offer_partner r join offers o on o.id = r.offer_id
    where r.clicks <> 0`.execute(db);
  await sql`
    insert into analytics_facts (brand_id, day, offer_id, partner_id, currency, sub1, sub2, sub3, sub4, sub5,
      pending, approved, rejected, revenue_cents, payout_cents)
    select brand_id, local_day, offer_id, partner_id, currency, sub1, sub2, sub3, sub4, sub5,
      case when status = 'pending' then 1 else 0 end,
      case when status = 'approved' then 1 else 0 end,
      case when status = 'rejected' then 1 else 0 end,
      case when status = 'rejected' then 0 else revenue_cents end,
      case when status = 'rejected' then 0 else payout_cents end
    from conversions`.execute(db);
}
