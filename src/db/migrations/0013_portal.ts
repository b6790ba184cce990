import type { Kysely } from 'kysely';

/**
 * The partner portal: a partner's sign-in (set through a one-time invite), sessions kept
 * apart from the dashboard's, payout details the partner enters for the brand, and the
 * partner's own API keys. Tokens and keys are stored only as SHA-256 hashes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('partner_accounts')
    .addColumn('partner_id', 'text', (c) => c.primaryKey().references('partners.id'))
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    /** `scrypt$N$r$p$salt$hash`; null until the partner accepts an invite. */
    .addColumn('password_hash', 'text')
    .addColumn('payout_method', 'text')
    .addColumn('payout_account', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_login_at', 'bigint')
    .execute();

  await db.schema
    .createTable('partner_invites')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('partner_invites_partner_idx').on('partner_invites').column('partner_id').execute();

  await db.schema
    .createTable('partner_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('brand_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('partner_sessions_partner_idx').on('partner_sessions').column('partner_id').execute();

  await db.schema
    .createTable('partner_api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('brand_id', 'text', (c) => c.notNull().references('brands.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('partner_api_keys_partner_idx')
    .on('partner_api_keys')
    .columns(['partner_id', 'id'])
    .execute();
}
