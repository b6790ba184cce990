import type { Kysely } from 'kysely';

/**
 * `partner_accounts.sign_in_key`: the password's key salted by the partner's e-mail
 * (users/passwords.ts, lookupKey), by which the portal sign-in finds the account. The sign-in
 * tried the password against at most five accounts sharing the e-mail, most recent sign-in
 * first, so another brand could lock a partner out by creating five accounts under the
 * partner's e-mail and signing in to them. Null for accounts whose password was set before
 * this migration, until their next sign-in.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partner_accounts').addColumn('sign_in_key', 'text').execute();
  await db.schema
    .createIndex('partner_accounts_sign_in_key_idx')
    .on('partner_accounts')
    .column('sign_in_key')
    .execute();
}
