/**
 * API keys: shown once at creation, stored only as a SHA-256 hash (a key is 192 random
 * bits, so a fast hash is enough; no salt or KDF needed), revocable, with `lastUsedAt`
 * recorded at most once per LAST_USED_WRITE_INTERVAL_MS per key so requests stay read-only.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Selectable } from 'kysely';
import { type Clock, toIso, toIsoOrNull } from '../../clock.js';
import { cachedLookup } from '../../db/cache.js';
import type { Database, Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { ApiKeyTable } from '../../db/schema.js';
import { newId } from '../../ids.js';

export const KEY_PREFIX = 'afk_';
const KEY_RANDOM_BYTES = 24;
/** Characters of the key kept in clear for display ("afk_Ab3dE…"). */
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 6;
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export type ApiKeyRow = Selectable<ApiKeyTable>;

export interface ApiKeyView {
  id: string;
  brandId: string;
  name: string;
  prefix: string;
  rateLimitPerMinute: number | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface AuthenticatedKey {
  keyId: string;
  brandId: string;
  rateLimitPerMinute: number | null;
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function apiKeyToView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    brandId: row.brand_id,
    name: row.name,
    prefix: row.prefix,
    rateLimitPerMinute: row.rate_limit_per_minute,
    createdAt: toIso(row.created_at),
    lastUsedAt: toIsoOrNull(row.last_used_at),
    revokedAt: toIsoOrNull(row.revoked_at),
  };
}

export interface CreateKeyInput {
  brandId: string;
  name?: string;
  /** Per-key override of RATE_LIMIT_PER_MINUTE (e.g. a trusted back-office integration). */
  rateLimitPerMinute?: number | null;
}

/** Inserts a key in the caller's transaction and returns it with its one-time secret. */
export async function insertApiKey(
  trx: Trx,
  clock: Clock,
  input: CreateKeyInput,
): Promise<{ key: ApiKeyRow; secret: string }> {
  const secret = KEY_PREFIX + randomBytes(KEY_RANDOM_BYTES).toString('base64url');
  const now = clock.now();
  const key: ApiKeyRow = {
    id: newId('key', now),
    brand_id: input.brandId,
    name: input.name ?? 'Default',
    prefix: secret.slice(0, DISPLAY_PREFIX_LENGTH),
    hash: hashApiKey(secret),
    rate_limit_per_minute: input.rateLimitPerMinute ?? null,
    created_at: now,
    last_used_at: null,
    revoked_at: null,
  };
  await trx.insertInto('api_keys').values(key).execute();
  return { key, secret };
}

export async function listApiKeys(db: Database, brandId: string): Promise<ApiKeyRow[]> {
  return db.read.selectFrom('api_keys').selectAll().where('brand_id', '=', brandId).orderBy('id', 'desc').execute();
}

/** Revokes a key; returns null when there is no such key (for that brand, when given). */
export async function revokeApiKey(
  db: Database,
  clock: Clock,
  keyId: string,
  brandId?: string,
): Promise<ApiKeyRow | null> {
  return db.transact(async (trx) => {
    let query = trx.selectFrom('api_keys').selectAll().where('id', '=', keyId);
    if (brandId) query = query.where('brand_id', '=', brandId);
    const row = await query.executeTakeFirst();
    if (!row) return null;
    if (row.revoked_at === null) {
      row.revoked_at = clock.now();
      await trx.updateTable('api_keys').set({ revoked_at: row.revoked_at }).where('id', '=', keyId).execute();
    }
    return row;
  });
}

const keyByHash = prepared(1, (q, hash: string) =>
  q
    .selectFrom('api_keys')
    .select(['id', 'brand_id', 'hash', 'rate_limit_per_minute', 'last_used_at', 'revoked_at'])
    .where('hash', '=', hash),
);

/**
 * Keys by hash, kept in memory: a revocation applies at once in this process and within
 * db/cache.ts's bounds (under a second) when another process (the CLI) made it. Unknown
 * hashes are remembered too, so guessing keys costs no query either.
 */
const keysByHash = cachedLookup((db, hash: string) => keyByHash.first(db.read, hash));

/** Looks up bearer tokens and remembers when each key was last seen, writing rarely. */
export class ApiKeyAuthenticator {
  private readonly lastWritten = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly onBackgroundError: (error: unknown) => void,
  ) {}

  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    if (!secret.startsWith(KEY_PREFIX)) return null;
    const hash = hashApiKey(secret);
    const row = await keysByHash.get({ db: this.db, clock: this.clock }, hash);
    // The lookup is by hash, so an attacker learns nothing from its timing; the explicit
    // constant-time comparison guards against a future change to a prefix lookup.
    if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(hash)) || row.revoked_at !== null) return null;
    this.touch(row.id, row.last_used_at);
    return { keyId: row.id, brandId: row.brand_id, rateLimitPerMinute: row.rate_limit_per_minute };
  }

  private touch(keyId: string, storedLastUsed: number | null): void {
    const now = this.clock.now();
    const last = Math.max(this.lastWritten.get(keyId) ?? 0, storedLastUsed ?? 0);
    if (now - last < LAST_USED_WRITE_INTERVAL_MS) return;
    this.lastWritten.set(keyId, now);
    this.db
      .transact((trx) => trx.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', keyId).execute())
      .catch(this.onBackgroundError);
  }
}
