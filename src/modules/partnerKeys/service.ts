/**
 * Partner API keys: a partner creates them in the portal to read their own data through
 * `/api/v1/partner/*`. Same rules as brand keys (192 random bits, shown once, stored as
 * SHA-256, revocable, rate limited per key) but a distinct prefix, `afp_`, and their own
 * table: a brand key is never accepted as a partner key, nor the other way round.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/database.js';
import type { PartnerApiKeyTable } from '../../db/schema.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { hashApiKey } from '../apiKeys/service.js';

export const PARTNER_KEY_PREFIX = 'afp_';
const KEY_RANDOM_BYTES = 24;
const DISPLAY_PREFIX_LENGTH = PARTNER_KEY_PREFIX.length + 6;
/** Active keys a partner may hold at once. */
export const MAX_PARTNER_KEYS = 10;
export const MAX_KEY_NAME_LENGTH = 100;

export type PartnerKeyRow = Selectable<PartnerApiKeyTable>;

export interface PartnerKeyScope {
  brandId: string;
  partnerId: string;
}

export interface AuthenticatedPartnerKey extends PartnerKeyScope {
  keyId: string;
}

export async function createPartnerKey(
  ctx: AppContext,
  scope: PartnerKeyScope,
  name: string,
): Promise<{ key: PartnerKeyRow; secret: string }> {
  const trimmed = name.trim() || 'Default';
  if (trimmed.length > MAX_KEY_NAME_LENGTH) {
    throw InvalidError.at('name', `must be at most ${MAX_KEY_NAME_LENGTH} characters`);
  }
  const secret = PARTNER_KEY_PREFIX + randomBytes(KEY_RANDOM_BYTES).toString('base64url');
  const now = ctx.clock.now();
  const key: PartnerKeyRow = {
    id: newId('pkey', now),
    brand_id: scope.brandId,
    partner_id: scope.partnerId,
    name: trimmed,
    prefix: secret.slice(0, DISPLAY_PREFIX_LENGTH),
    hash: hashApiKey(secret),
    created_at: now,
    last_used_at: null,
    revoked_at: null,
  };
  await ctx.db.transact(async (trx) => {
    const active = await trx
      .selectFrom('partner_api_keys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('partner_id', '=', scope.partnerId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(active.n) >= MAX_PARTNER_KEYS) {
      throw InvalidError.at('name', `you can hold at most ${MAX_PARTNER_KEYS} keys; revoke one first`);
    }
    await trx.insertInto('partner_api_keys').values(key).execute();
  });
  return { key, secret };
}

export function listPartnerKeys(q: Queryable, scope: PartnerKeyScope): Promise<PartnerKeyRow[]> {
  return q
    .selectFrom('partner_api_keys')
    .selectAll()
    .where('partner_id', '=', scope.partnerId)
    .where('brand_id', '=', scope.brandId)
    .orderBy('id', 'desc')
    .execute();
}

export async function revokePartnerKey(ctx: AppContext, scope: PartnerKeyScope, keyId: string): Promise<PartnerKeyRow> {
  return ctx.db.transact(async (trx) => {
    const row = await trx
      .selectFrom('partner_api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('partner_id', '=', scope.partnerId)
      .where('brand_id', '=', scope.brandId)
      .executeTakeFirst();
    if (!row) throw new NotFoundError('API key');
    if (row.revoked_at !== null) throw new ConflictError('This key is already revoked.');
    const now = ctx.clock.now();
    await trx.updateTable('partner_api_keys').set({ revoked_at: now }).where('id', '=', keyId).execute();
    return { ...row, revoked_at: now };
  });
}

/** How often `lastUsedAt` is written at most per key, so reads stay reads. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/**
 * The active partner key with this secret, of a partner that is still active; null
 * otherwise (unknown, revoked, banned partner, or not a partner key at all).
 */
export async function authenticatePartnerKey(ctx: AppContext, secret: string): Promise<AuthenticatedPartnerKey | null> {
  if (!secret.startsWith(PARTNER_KEY_PREFIX)) return null;
  const hash = hashApiKey(secret);
  const row = await ctx.db.read
    .selectFrom('partner_api_keys as k')
    .innerJoin('partners as p', 'p.id', 'k.partner_id')
    .select(['k.id', 'k.brand_id', 'k.partner_id', 'k.hash', 'k.revoked_at', 'k.last_used_at', 'p.status'])
    .where('k.hash', '=', hash)
    .executeTakeFirst();
  // Looked up by hash, so timing reveals nothing; the explicit comparison guards a future prefix lookup.
  if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(hash))) return null;
  if (row.revoked_at !== null || row.status !== 'active') return null;
  const now = ctx.clock.now();
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_WRITE_INTERVAL_MS) {
    ctx.db
      .transact((trx) =>
        trx.updateTable('partner_api_keys').set({ last_used_at: now }).where('id', '=', row.id).execute(),
      )
      .catch((error) => ctx.logger.warn({ err: error }, 'could not record partner key use'));
  }
  return { keyId: row.id, brandId: row.brand_id, partnerId: row.partner_id };
}
