/**
 * Portal access: a brand invites a partner with a one-time link valid for INVITE_TTL_MS. The
 * link carries a random 256-bit token; only its SHA-256 is stored. Accepting it sets the
 * partner's password (a new invite is also how a partner resets a forgotten one), ends the
 * partner's other sessions and marks the invite used. A new invite replaces unused older ones.
 */
import type { AppContext } from '../../context.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { findPartner, type PartnerRow } from '../partners/repository.js';
import { hashPassword, lookupKey, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../users/passwords.js';
import { hashSessionToken, newToken } from '../users/sessions.js';

export const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
/** base64url of 32 bytes: anything else is not one of our tokens and needs no lookup. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface Invite {
  partnerId: string;
  url: string;
  expiresAt: number;
}

export function inviteUrl(ctx: AppContext, token: string): string {
  // The token rides in the query string: request logs keep the path only.
  return `${ctx.config.publicUrl}/portal/invite?token=${token}`;
}

export async function createInvite(ctx: AppContext, brandId: string, partnerId: string): Promise<Invite> {
  const token = newToken();
  const now = ctx.clock.now();
  const expiresAt = now + INVITE_TTL_MS;
  await ctx.db.transact(async (trx) => {
    const partner = await findPartner(trx, brandId, partnerId);
    if (!partner) throw new NotFoundError('Partner');
    if (partner.status !== 'active') {
      throw new ConflictError(`Only active partners can be invited to the portal; this partner is ${partner.status}.`);
    }
    await trx.deleteFrom('partner_invites').where('partner_id', '=', partnerId).where('used_at', 'is', null).execute();
    await trx
      .insertInto('partner_invites')
      .values({
        id: newId('inv', now),
        brand_id: brandId,
        partner_id: partnerId,
        token_hash: hashSessionToken(token),
        created_at: now,
        expires_at: expiresAt,
        used_at: null,
      })
      .execute();
  });
  return { partnerId, url: inviteUrl(ctx, token), expiresAt };
}

/** The partner an unused, unexpired invite token belongs to (active partners only). */
export async function findInvite(
  ctx: AppContext,
  token: string | undefined,
): Promise<{ inviteId: string; partner: PartnerRow } | null> {
  if (!token || !TOKEN_PATTERN.test(token)) return null;
  const invite = await ctx.db.read
    .selectFrom('partner_invites')
    .select(['id', 'brand_id', 'partner_id', 'expires_at', 'used_at'])
    .where('token_hash', '=', hashSessionToken(token))
    .executeTakeFirst();
  if (!invite || invite.used_at !== null || invite.expires_at <= ctx.clock.now()) return null;
  const partner = await findPartner(ctx.db.read, invite.brand_id, invite.partner_id);
  if (partner?.status !== 'active') return null;
  return { inviteId: invite.id, partner };
}

export function passwordProblem(password: string, confirmation: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password.length > MAX_PASSWORD_LENGTH) return `Choose a password of at most ${MAX_PASSWORD_LENGTH} characters.`;
  if (password !== confirmation) return 'The two passwords are not the same.';
  return null;
}

/**
 * Sets the password of the invite's partner and uses the invite up. Returns null when the
 * invite is no longer valid (used meanwhile, expired, partner banned).
 */
export async function acceptInvite(ctx: AppContext, token: string, password: string): Promise<PartnerRow | null> {
  const found = await findInvite(ctx, token);
  if (!found) return null;
  const [passwordHash, signInKey] = await Promise.all([
    hashPassword(password),
    lookupKey(password, found.partner.email.trim().toLowerCase()),
  ]);
  const now = ctx.clock.now();
  return ctx.db.transact(async (trx) => {
    // Guarded by used_at: of two tabs accepting one invite at once, one wins.
    const used = await trx
      .updateTable('partner_invites')
      .set({ used_at: now })
      .where('id', '=', found.inviteId)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(used.numUpdatedRows) === 0) return null;
    const { partner } = found;
    const existing = await trx
      .selectFrom('partner_accounts')
      .select('partner_id')
      .where('partner_id', '=', partner.id)
      .executeTakeFirst();
    if (existing) {
      await trx
        .updateTable('partner_accounts')
        .set({ password_hash: passwordHash, sign_in_key: signInKey, updated_at: now })
        .where('partner_id', '=', partner.id)
        .execute();
    } else {
      await trx
        .insertInto('partner_accounts')
        .values({
          partner_id: partner.id,
          brand_id: partner.brand_id,
          password_hash: passwordHash,
          sign_in_key: signInKey,
          payout_method: null,
          payout_account: null,
          created_at: now,
          updated_at: now,
          last_login_at: null,
        })
        .execute();
    }
    // A new password ends every session opened with the old one.
    await trx.deleteFrom('partner_sessions').where('partner_id', '=', partner.id).execute();
    return partner;
  });
}
