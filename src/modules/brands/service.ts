import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { Database, Trx } from '../../db/database.js';
import { InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { type ApiKeyRow, type CreateKeyInput, insertApiKey } from '../apiKeys/service.js';
import { canonicalTimeZone, currencyCode, isCurrencyCode, isTimeZone } from '../validation.js';
import { type BrandRow, findBrandById } from './repository.js';
import type { UpdateBrandBody } from './schemas.js';

export const DEFAULT_FRAUD_THRESHOLD = 75;

export interface CreateBrandInput {
  name: string;
  timezone?: string;
  currency?: string;
}

function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return base || 'brand';
}

export function validateBrandSettings(input: { timezone?: string; currency?: string }): void {
  const problems = [];
  if (input.timezone !== undefined && !isTimeZone(input.timezone)) {
    problems.push({ path: 'timezone', message: 'must be an IANA time zone such as Europe/Berlin' });
  }
  if (input.currency !== undefined && !isCurrencyCode(input.currency)) {
    problems.push({ path: 'currency', message: 'must be an ISO 4217 currency code such as USD' });
  }
  if (problems.length > 0) throw new InvalidError(problems);
}

/** Creates a brand with a unique slug derived from its name. Runs inside the caller's transaction. */
export async function insertBrand(trx: Trx, clock: Clock, input: CreateBrandInput): Promise<BrandRow> {
  validateBrandSettings(input);
  const base = slugify(input.name);
  let slug = base;
  while (await trx.selectFrom('brands').select('id').where('slug', '=', slug).executeTakeFirst()) {
    slug = `${base}-${randomBytes(3).toString('hex')}`;
  }
  const now = clock.now();
  const row: BrandRow = {
    id: newId('brd', now),
    name: input.name,
    slug,
    timezone: input.timezone === undefined ? 'UTC' : canonicalTimeZone(input.timezone),
    currency: input.currency === undefined ? 'USD' : currencyCode(input.currency),
    fraud_threshold: DEFAULT_FRAUD_THRESHOLD,
    auto_ban_high_risk_clicks: null,
    auto_ban_window_minutes: null,
    created_at: now,
    updated_at: now,
  };
  await trx.insertInto('brands').values(row).execute();
  return row;
}

export interface NewBrand {
  brand: BrandRow;
  key: ApiKeyRow;
  /** The key in clear: shown once to whoever created the brand, never stored. */
  secret: string;
}

/**
 * A brand and its first API key, in the caller's transaction: a brand nobody can call is of
 * no use, so every way a brand comes to be (the CLI, the first start, tests) goes through here.
 */
export async function createBrandWithFirstKey(
  trx: Trx,
  clock: Clock,
  input: CreateBrandInput,
  keyOptions: Omit<CreateKeyInput, 'brandId'> = {},
): Promise<NewBrand> {
  const brand = await insertBrand(trx, clock, input);
  const { key, secret } = await insertApiKey(trx, clock, { ...keyOptions, brandId: brand.id });
  return { brand, key, secret };
}

export async function updateBrand(
  db: Database,
  clock: Clock,
  brandId: string,
  patch: UpdateBrandBody,
): Promise<BrandRow> {
  validateBrandSettings(patch);
  return db.transact(async (trx) => {
    const changes: Partial<BrandRow> = { updated_at: clock.now() };
    if (patch.name !== undefined) changes.name = patch.name;
    if (patch.timezone !== undefined) changes.timezone = canonicalTimeZone(patch.timezone);
    if (patch.currency !== undefined) changes.currency = currencyCode(patch.currency);
    if (patch.fraudThreshold !== undefined) changes.fraud_threshold = patch.fraudThreshold;
    if (patch.autoBan !== undefined) {
      changes.auto_ban_high_risk_clicks = patch.autoBan?.highRiskClicks ?? null;
      changes.auto_ban_window_minutes = patch.autoBan?.windowMinutes ?? null;
    }
    await trx.updateTable('brands').set(changes).where('id', '=', brandId).execute();
    const row = await findBrandById(trx, brandId);
    if (!row) throw new NotFoundError('Brand');
    return row;
  });
}
