/**
 * Partner lifecycle: applicant → active → banned (a ban from any non-banned state). Each
 * change records its event in the same transaction.
 */
import type { Clock } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { lockRowForUpdate } from '../../db/locks.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { findBrandBySlug } from '../brands/repository.js';
import { recordEvent } from '../events/outbox.js';
import { type Metadata, mergedMetadata, metadataText, parseMetadata } from '../metadata.js';
import { isHttpUrl } from '../urls.js';
import { findPartner, type PartnerRow } from './repository.js';
import type { ApplyBody, CreatePartnerBody } from './schemas.js';

function validateWebsite(website: string | null | undefined): void {
  if (website != null && !isHttpUrl(website)) {
    throw InvalidError.at('website', 'must be an absolute http(s) URL');
  }
}

function partnerFields(row: PartnerRow) {
  return {
    partnerId: row.id,
    name: row.name,
    email: row.email,
    website: row.website,
    metadata: parseMetadata(row.metadata),
  };
}

async function insertPartner(
  trx: Trx,
  clock: Clock,
  brandId: string,
  input: CreatePartnerBody,
  status: 'applicant' | 'active',
): Promise<PartnerRow> {
  const now = clock.now();
  const row: PartnerRow = {
    id: newId('prt', now),
    brand_id: brandId,
    name: input.name,
    email: input.email,
    website: input.website ?? null,
    status,
    ban_reason: null,
    created_at: now,
    approved_at: status === 'active' ? now : null,
    banned_at: null,
    updated_at: now,
    metadata: metadataText(input.metadata),
  };
  await trx.insertInto('partners').values(row).execute();
  return row;
}

/** A partner added by the brand itself starts active (and so fires partner.approved). */
export async function createPartner(ctx: AppContext, brandId: string, input: CreatePartnerBody): Promise<PartnerRow> {
  validateWebsite(input.website);
  return ctx.db.transact(async (trx) => {
    const row = await insertPartner(trx, ctx.clock, brandId, input, 'active');
    await recordEvent(ctx, trx, brandId, 'partner.approved', { ...partnerFields(row), status: 'active' });
    return row;
  });
}

/** The public application form: creates an applicant of the brand named by its slug. */
export async function applyAsPartner(ctx: AppContext, input: ApplyBody): Promise<PartnerRow> {
  validateWebsite(input.website);
  const brand = await findBrandBySlug(ctx.db, input.brandSlug);
  if (!brand) throw InvalidError.at('brandSlug', 'no brand has this slug');
  return ctx.db.transact(async (trx) => {
    const row = await insertPartner(trx, ctx.clock, brand.id, input, 'applicant');
    await recordEvent(ctx, trx, brand.id, 'partner.applied', { ...partnerFields(row), status: 'applicant' });
    return row;
  });
}

export async function approvePartner(ctx: AppContext, brandId: string, partnerId: string): Promise<PartnerRow> {
  return ctx.db.transact(async (trx) => {
    // The status decides: a ban committing meanwhile must not be overwritten with "active".
    await lockRowForUpdate(trx, 'partners', partnerId);
    const row = await findPartner(trx, brandId, partnerId);
    if (!row) throw new NotFoundError('Partner');
    if (row.status !== 'applicant')
      throw new ConflictError(`Only applicants can be approved; this partner is ${row.status}.`);
    const now = ctx.clock.now();
    const updated: PartnerRow = { ...row, status: 'active', approved_at: now, updated_at: now };
    await trx
      .updateTable('partners')
      .set({ status: 'active', approved_at: now, updated_at: now })
      .where('id', '=', row.id)
      .execute();
    await recordEvent(ctx, trx, brandId, 'partner.approved', { ...partnerFields(updated), status: 'active' });
    return updated;
  });
}

/**
 * Bans a partner in the caller's transaction. Returns null when it is already banned, so
 * callers decide whether that is a conflict (manual) or nothing to do (automation).
 */
export async function banPartnerInTrx(
  ctx: AppContext,
  trx: Trx,
  row: PartnerRow,
  reason: string | null,
  bannedBy: 'manual' | 'automation',
): Promise<PartnerRow | null> {
  if (row.status === 'banned') return null;
  const now = ctx.clock.now();
  const result = await trx
    .updateTable('partners')
    .set({ status: 'banned', ban_reason: reason, banned_at: now, updated_at: now })
    .where('id', '=', row.id)
    .where('status', '!=', 'banned')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return null;
  const updated: PartnerRow = { ...row, status: 'banned', ban_reason: reason, banned_at: now, updated_at: now };
  await recordEvent(ctx, trx, row.brand_id, 'partner.banned', {
    ...partnerFields(updated),
    status: 'banned',
    reason,
    bannedBy,
  });
  return updated;
}

export async function banPartner(
  ctx: AppContext,
  brandId: string,
  partnerId: string,
  reason: string | null,
): Promise<PartnerRow> {
  return ctx.db.transact(async (trx) => {
    const row = await findPartner(trx, brandId, partnerId);
    if (!row) throw new NotFoundError('Partner');
    const banned = await banPartnerInTrx(ctx, trx, row, reason, 'manual');
    if (!banned) throw new ConflictError('This partner is already banned.');
    return banned;
  });
}

/** Merges `metadata` into the partner's (PATCH /partners/:id). */
export async function updatePartner(
  ctx: AppContext,
  brandId: string,
  partnerId: string,
  patch: { metadata?: Metadata | null },
): Promise<PartnerRow> {
  return ctx.db.transact(async (trx) => {
    await lockRowForUpdate(trx, 'partners', partnerId);
    const row = await findPartner(trx, brandId, partnerId);
    if (!row) throw new NotFoundError('Partner');
    const updated: PartnerRow = {
      ...row,
      metadata: mergedMetadata(row.metadata, patch.metadata),
      updated_at: ctx.clock.now(),
    };
    await trx
      .updateTable('partners')
      .set({ metadata: updated.metadata, updated_at: updated.updated_at })
      .where('id', '=', row.id)
      .execute();
    return updated;
  });
}
