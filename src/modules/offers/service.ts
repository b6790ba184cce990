import type { AppContext } from '../../context.js';
import { lockRowForUpdate } from '../../db/locks.js';
import { InvalidError, NotFoundError, type Problem } from '../../errors.js';
import { newId } from '../../ids.js';
import { findBrandById } from '../brands/repository.js';
import { applyCapChanges, recordCapsReached } from '../caps/service.js';
import { mergedMetadata, metadataText } from '../metadata.js';
import { HOST_MACRO_PROBLEM, hasHostMacro, httpUrlProblem } from '../urls.js';
import { currencyCode, isCurrencyCode } from '../validation.js';
import { findOffer, type OfferRow } from './repository.js';
import type { CreateOfferBody, UpdateOfferBody } from './schemas.js';

function validateOffer(input: UpdateOfferBody): void {
  const problems: Problem[] = [];
  for (const [path, url] of [
    ['destinationUrl', input.destinationUrl],
    ['fallbackUrl', input.fallbackUrl],
  ] as const) {
    if (url == null) continue;
    const problem = httpUrlProblem(url) ?? (hasHostMacro(url) ? HOST_MACRO_PROBLEM : null);
    if (problem) problems.push({ path, message: problem });
  }
  if (input.currency !== undefined && !isCurrencyCode(input.currency)) {
    problems.push({ path: 'currency', message: 'must be an ISO 4217 currency code such as USD' });
  }
  if (problems.length > 0) throw new InvalidError(problems);
}

/** The offer's money fields: its default amounts per conversion, both in its `currency`. */
const MONEY_FIELDS = [
  ['revenueCents', 'revenue_cents'],
  ['payoutCents', 'payout_cents'],
] as const;

/**
 * A new currency names the offer's amounts again, as a conversion in another currency must
 * (conversions/service.ts): USD 50.00 left as `5000` under KWD would be KWD 5.000, a third of
 * it, for every later conversion. An amount of 0 is 0 in any currency and needs nothing.
 */
function relabelledDefaultsProblems(existing: OfferRow, patch: UpdateOfferBody): Problem[] {
  if (patch.currency === undefined) return [];
  const currency = currencyCode(patch.currency);
  if (currency === existing.currency) return [];
  return MONEY_FIELDS.filter(([field, column]) => patch[field] === undefined && existing[column] !== 0).map(
    ([field]) => ({
      path: field,
      message: `is required when currency changes (${existing.currency} to ${currency}): the offer's amount is in ${existing.currency} and is never relabelled`,
    }),
  );
}

/** Columns changed by a create or patch body (caps merge key by key; null clears one). */
function changesFrom(input: UpdateOfferBody): Partial<OfferRow> {
  const changes: Partial<OfferRow> = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.destinationUrl !== undefined) changes.destination_url = input.destinationUrl;
  if (input.status !== undefined) changes.status = input.status;
  if (input.currency !== undefined) changes.currency = currencyCode(input.currency);
  if (input.revenueCents !== undefined) changes.revenue_cents = input.revenueCents;
  if (input.payoutCents !== undefined) changes.payout_cents = input.payoutCents;
  if (input.conversionStatus !== undefined) changes.conversion_status = input.conversionStatus;
  if (input.holdSeconds !== undefined) changes.hold_seconds = input.holdSeconds;
  if (input.fallbackUrl !== undefined) changes.fallback_url = input.fallbackUrl;
  if (input.caps?.daily !== undefined) changes.cap_daily = input.caps.daily;
  if (input.caps?.weekly !== undefined) changes.cap_weekly = input.caps.weekly;
  if (input.caps?.monthly !== undefined) changes.cap_monthly = input.caps.monthly;
  if (input.caps?.global !== undefined) changes.cap_global = input.caps.global;
  return changes;
}

export async function createOffer(ctx: AppContext, brandId: string, input: CreateOfferBody): Promise<OfferRow> {
  validateOffer(input);
  return ctx.db.transact(async (trx) => {
    const brand = await findBrandById(trx, brandId);
    if (!brand) throw new NotFoundError('Brand');
    const now = ctx.clock.now();
    const row: OfferRow = {
      id: newId('off', now),
      brand_id: brandId,
      name: input.name,
      destination_url: input.destinationUrl,
      status: 'active',
      currency: brand.currency,
      revenue_cents: 0,
      payout_cents: 0,
      conversion_status: 'pending',
      hold_seconds: null,
      cap_daily: null,
      cap_weekly: null,
      cap_monthly: null,
      cap_global: null,
      fallback_url: null,
      postback_token: null,
      created_at: now,
      updated_at: now,
      ...changesFrom(input),
      metadata: metadataText(input.metadata),
    };
    await trx.insertInto('offers').values(row).execute();
    return row;
  });
}

export async function updateOffer(
  ctx: AppContext,
  brandId: string,
  offerId: string,
  patch: UpdateOfferBody,
): Promise<OfferRow> {
  validateOffer(patch);
  return ctx.db.transact(async (trx) => {
    // Metadata is merged with what is stored: a concurrent merge must not be lost.
    await lockRowForUpdate(trx, 'offers', offerId);
    const existing = await findOffer(trx, brandId, offerId);
    if (!existing) throw new NotFoundError('Offer');
    const relabelled = relabelledDefaultsProblems(existing, patch);
    if (relabelled.length > 0) throw new InvalidError(relabelled);
    const changes = { ...changesFrom(patch), updated_at: ctx.clock.now() };
    if (patch.metadata !== undefined) changes.metadata = mergedMetadata(existing.metadata, patch.metadata);
    await trx.updateTable('offers').set(changes).where('id', '=', offerId).execute();
    const updated = { ...existing, ...changes };
    if (patch.caps !== undefined) {
      const brand = await findBrandById(trx, brandId);
      if (!brand) throw new NotFoundError('Brand');
      const reached = await applyCapChanges(trx, existing, updated, brand.timezone, changes.updated_at);
      await recordCapsReached(ctx, trx, brandId, offerId, reached);
    }
    return updated;
  });
}
