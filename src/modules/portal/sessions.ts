/**
 * Partner sign-in and sessions, apart from the dashboard's: their own table, cookie and path
 * (/portal). As there, the browser holds a random 256-bit token and the database only its
 * SHA-256 and the session's CSRF secret. A banned partner's sessions stop working at once.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { BrandRow } from '../brands/repository.js';
import type { PartnerRow } from '../partners/repository.js';
import { hashPassword, verifyPassword } from '../users/passwords.js';
import { hashSessionToken, newToken } from '../users/sessions.js';

export const PARTNER_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/**
 * One person may partner with several brands under one email: the sign-in tries the
 * password against at most this many of their accounts (each try costs one scrypt).
 */
const MAX_ACCOUNTS_PER_EMAIL = 5;

export interface PartnerSession {
  id: string;
  csrfSecret: string;
  partner: PartnerRow;
  brand: BrandRow;
}

let decoyHash: Promise<string> | null = null;
/** Verified against when no account matches, so timing does not reveal which emails exist. */
function decoy(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return decoyHash;
}

export async function signInPartner(
  ctx: AppContext,
  email: string,
  password: string,
): Promise<{ token: string; partnerId: string } | null> {
  const normalised = email.trim().toLowerCase();
  const accounts = normalised
    ? await ctx.db.read
        .selectFrom('partner_accounts as a')
        .innerJoin('partners as p', 'p.id', 'a.partner_id')
        .select(['a.partner_id', 'a.brand_id', 'a.password_hash'])
        .where(sql<string>`lower(p.email)`, '=', normalised)
        .where('p.status', '=', 'active')
        .where('a.password_hash', 'is not', null)
        .orderBy(sql`coalesce(a.last_login_at, 0)`, 'desc')
        .orderBy('a.partner_id', 'desc')
        .limit(MAX_ACCOUNTS_PER_EMAIL)
        .execute()
    : [];
  let match: (typeof accounts)[number] | undefined;
  for (const account of accounts) {
    if (await verifyPassword(password, account.password_hash ?? '')) {
      match = account;
      break;
    }
  }
  if (accounts.length === 0) await verifyPassword(password, await decoy());
  if (!match) return null;
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
