/**
 * Partner sign-in and sessions, apart from the dashboard's: their own table, cookie and path
 * (/portal). As there, the browser holds a random 256-bit token and the database only its
 * SHA-256 and the session's CSRF secret. A banned partner's sessions stop working at once.
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { BrandRow } from '../brands/repository.js';
import type { PartnerRow } from '../partners/repository.js';
import { lookupKey, MAX_PASSWORD_LENGTH, verifyPassword } from '../users/passwords.js';
import { hashSessionToken, newToken } from '../users/sessions.js';

export const PARTNER_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/**
 * Accounts whose password was set before migration 0032 have no sign-in key yet: the sign-in
 * tries the password against at most this many of them (each try costs one scrypt).
 */
const MAX_UNKEYED_ACCOUNTS = 5;

export interface PartnerSession {
  id: string;
  csrfSecret: string;
  partner: PartnerRow;
  brand: BrandRow;
}

interface Account {
  partner_id: string;
  brand_id: string;
  status: string;
}

/**
 * The account the e-mail and password open. One person may partner with several brands under
 * one e-mail, and any brand may name any e-mail: the account is found by the password's key
 * salted by the e-mail (one scrypt, whatever the number of accounts, so neither the time taken
 * nor accounts another brand made under the e-mail can keep a partner out). Of two accounts
 * with the same e-mail and password, the one signed in to last.
 */
async function accountOf(ctx: AppContext, email: string, password: string): Promise<Account | undefined> {
  const key = await lookupKey(password, email);
  if (!email) return undefined;
  const accounts = () =>
    ctx.db.read
      .selectFrom('partner_accounts as a')
      .innerJoin('partners as p', 'p.id', 'a.partner_id')
      .select(['a.partner_id', 'a.brand_id', 'a.password_hash', 'p.status'])
      .where(sql<string>`lower(p.email)`, '=', email)
      // A banned account is found too, to be told why it cannot sign in; an active one first.
      .where('p.status', 'in', ['active', 'banned'])
      .orderBy(sql`case when p.status = 'active' then 0 else 1 end`)
      .orderBy(sql`coalesce(a.last_login_at, 0)`, 'desc')
      .orderBy('a.partner_id', 'desc');
  const keyed = await accounts().where('a.sign_in_key', '=', key).executeTakeFirst();
  if (keyed) return keyed;
  // A password set before sign-in keys: verified as before, and keyed once it opens.
  const unkeyed = await accounts()
    .where('a.sign_in_key', 'is', null)
    .where('a.password_hash', 'is not', null)
    .limit(MAX_UNKEYED_ACCOUNTS)
    .execute();
  for (const account of unkeyed) {
    if (await verifyPassword(password, account.password_hash ?? '')) {
      await ctx.db.transact((trx) =>
        trx
          .updateTable('partner_accounts')
          .set({ sign_in_key: key })
          .where('partner_id', '=', account.partner_id)
          .execute(),
      );
      return account;
    }
  }
  return undefined;
}

/**
 * A sign-in: a session, `banned` (the e-mail and password are right but the brand banned the
 * partner: saying so only to whoever knows the password tells no one else whether the e-mail
 * has an account), or null for a wrong e-mail or password.
 */
export type SignIn = { token: string; partnerId: string } | { banned: true } | null;

export async function signInPartner(ctx: AppContext, email: string, password: string): Promise<SignIn> {
  // No password longer than the maximum can be set (the invite refuses it): a longer one is wrong.
  if (password.length > MAX_PASSWORD_LENGTH) return null;
  const match = await accountOf(ctx, email.trim().toLowerCase(), password);
  if (!match) return null;
  if (match.status !== 'active') return { banned: true };
  const { partner_id: partnerId, brand_id: brandId } = match;
  const token = newToken();
  const now = ctx.clock.now();
  await ctx.db.transact(async (trx) => {
    await trx
      .deleteFrom('partner_sessions')
      .where('partner_id', '=', partnerId)
      .where('expires_at', '<=', now)
      .execute();
    await trx
      .insertInto('partner_sessions')
      .values({
        id: hashSessionToken(token),
        partner_id: partnerId,
        brand_id: brandId,
        csrf_token: newToken(),
        created_at: now,
        expires_at: now + PARTNER_SESSION_TTL_MS,
      })
      .execute();
    await trx.updateTable('partner_accounts').set({ last_login_at: now }).where('partner_id', '=', partnerId).execute();
  });
  return { token, partnerId };
}

/** Opens a session directly (right after a partner set their password from an invite). */
export async function openPartnerSession(ctx: AppContext, partner: PartnerRow): Promise<string> {
  const token = newToken();
  const now = ctx.clock.now();
  await ctx.db.transact(async (trx) => {
    await trx
      .insertInto('partner_sessions')
      .values({
        id: hashSessionToken(token),
        partner_id: partner.id,
        brand_id: partner.brand_id,
        csrf_token: newToken(),
        created_at: now,
        expires_at: now + PARTNER_SESSION_TTL_MS,
      })
      .execute();
    await trx
      .updateTable('partner_accounts')
      .set({ last_login_at: now })
      .where('partner_id', '=', partner.id)
      .execute();
  });
  return token;
}

export type PartnerSessionLookup = { status: 'valid'; session: PartnerSession } | { status: 'expired' | 'none' };

export async function findPartnerSession(ctx: AppContext, token: string | undefined): Promise<PartnerSessionLookup> {
  if (!token || !TOKEN_PATTERN.test(token)) return { status: 'none' };
  const id = hashSessionToken(token);
  const row = await ctx.db.read
    .selectFrom('partner_sessions')
    .select(['id', 'partner_id', 'brand_id', 'csrf_token', 'expires_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return { status: 'none' };
  const [partner, brand] = await Promise.all([
    ctx.db.read
      .selectFrom('partners')
      .selectAll()
      .where('id', '=', row.partner_id)
      .where('brand_id', '=', row.brand_id)
      .executeTakeFirst(),
    ctx.db.read.selectFrom('brands').selectAll().where('id', '=', row.brand_id).executeTakeFirst(),
  ]);
  if (row.expires_at <= ctx.clock.now() || !partner || !brand || partner.status !== 'active') {
    await endPartnerSession(ctx, token);
    return { status: 'expired' };
  }
  return { status: 'valid', session: { id: row.id, csrfSecret: row.csrf_token, partner, brand } };
}

export async function endPartnerSession(ctx: AppContext, token: string): Promise<void> {
  const id = hashSessionToken(token);
  await ctx.db.transact((trx) => trx.deleteFrom('partner_sessions').where('id', '=', id).execute());
}
