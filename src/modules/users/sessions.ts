/**
 * Dashboard sign-in and sessions. The browser holds a random 256-bit token; the database
 * holds only its SHA-256 (a stolen table cannot be replayed as cookies), the owner, the
 * brand and the session's CSRF secret, which every form token of the session is bound to
 * (it never leaves the server). Sessions end 12 hours after sign-in or at sign-out.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { BrandRow } from '../brands/repository.js';
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from './passwords.js';

/** A working day plus margin; long enough not to interrupt, short enough to bound a stolen cookie. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const TOKEN_BYTES = 32;
/** base64url of 32 bytes: anything else is not one of our tokens and needs no lookup. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface DashboardSession {
  /** SHA-256 (hex) of the cookie token: the row's id. */
  id: string;
  userId: string;
  email: string;
  csrfSecret: string;
  expiresAt: number;
  brand: BrandRow;
}

export type SessionLookup = { status: 'valid'; session: DashboardSession } | { status: 'expired' | 'none' };

export function newToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Verified against when the email is unknown, so a wrong email costs the same scrypt time
 * as a wrong password and response times do not reveal which accounts exist.
 */
let decoyHash: Promise<string> | null = null;
function decoy(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return decoyHash;
}

/** Checks email and password; on success opens a session and returns its cookie token. */
export async function signIn(
  ctx: AppContext,
  email: string,
  password: string,
): Promise<{ token: string; expiresAt: number } | null> {
  // No password longer than the maximum can be set (createUser refuses it): a longer one is wrong.
  if (password.length > MAX_PASSWORD_LENGTH) return null;
  const normalised = email.trim().toLowerCase();
  const user = normalised
    ? await ctx.db.read
        .selectFrom('dashboard_users')
        .select(['id', 'brand_id', 'password_hash'])
        .where('email', '=', normalised)
        .executeTakeFirst()
    : undefined;
  const valid = await verifyPassword(password, user?.password_hash ?? (await decoy()));
  if (!user || !valid) return null;

  const token = newToken();
  const now = ctx.clock.now();
  const expiresAt = now + SESSION_TTL_MS;
  await ctx.db.transact(async (trx) => {
    // Housekeeping: the user's own expired sessions go when they next sign in.
    await trx.deleteFrom('dashboard_sessions').where('user_id', '=', user.id).where('expires_at', '<=', now).execute();
    await trx
      .insertInto('dashboard_sessions')
      .values({
        id: hashSessionToken(token),
        user_id: user.id,
        brand_id: user.brand_id,
        csrf_token: newToken(),
        created_at: now,
        expires_at: expiresAt,
      })
      .execute();
    await trx.updateTable('dashboard_users').set({ last_login_at: now }).where('id', '=', user.id).execute();
  });
  return { token, expiresAt };
}

/** The session a cookie token belongs to; an expired one is deleted on sight. */
export async function findSession(ctx: AppContext, token: string | undefined): Promise<SessionLookup> {
  if (!token || !TOKEN_PATTERN.test(token)) return { status: 'none' };
  const id = hashSessionToken(token);
  const row = await ctx.db.read
    .selectFrom('dashboard_sessions as s')
    .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
    .innerJoin('brands as b', 'b.id', 's.brand_id')
    .select(['s.id as session_id', 's.user_id', 's.csrf_token', 's.expires_at', 'u.email'])
    .selectAll('b')
    .where('s.id', '=', id)
    .executeTakeFirst();
  if (!row) return { status: 'none' };
  if (row.expires_at <= ctx.clock.now()) {
    await endSession(ctx, token);
    return { status: 'expired' };
  }
  const { session_id, user_id, csrf_token, expires_at, email, ...brand } = row;
  return {
    status: 'valid',
    session: { id: session_id, userId: user_id, email, csrfSecret: csrf_token, expiresAt: expires_at, brand },
  };
}

/** Sign-out: the row is deleted, so the cookie is worthless even if it was copied. */
export async function endSession(ctx: AppContext, token: string): Promise<void> {
  const id = hashSessionToken(token);
  await ctx.db.transact((trx) => trx.deleteFrom('dashboard_sessions').where('id', '=', id).execute());
}
