/**
 * Partner postbacks (outbound): URL templates per partner, global or per offer. The
 * delivery engine turns them into deliveries of conversion events (target.ts), with the
 * same time-out, retries, SSRF guard and delivery log as webhooks.
 */
import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { PartnerPostbackTable } from '../../db/schema.js';
import { InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { endDeliveriesOfRemovedTarget } from '../deliveries/removal.js';
import { validateTargetUrl } from '../deliveries/targetUrl.js';
import { findOffer } from '../offers/repository.js';
import { findPartner } from '../partners/repository.js';
import { HOST_MACRO_PROBLEM, hasHostMacro, httpUrlProblem } from '../urls.js';
import type { CreatePostbackBody, Postback } from './schemas.js';
import { postbackTarget } from './target.js';

/** Templates per partner at most. */
export const MAX_POSTBACKS_PER_PARTNER = 20;

export type PostbackRow = Selectable<PartnerPostbackTable>;

/** The problem of an offerId naming no offer of the brand. */
export const UNKNOWN_OFFER = 'no offer with this id';

export function postbackToApi(row: PostbackRow): Postback {
  return {
    id: row.id,
    partnerId: row.partner_id,
    offerId: row.offer_id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    createdAt: toIso(row.created_at),
  };
}

async function requirePartner(ctx: AppContext, brandId: string, partnerId: string) {
  const partner = await findPartner(ctx.db.read, brandId, partnerId);
  if (!partner) throw new NotFoundError('Partner');
  return partner;
}

export async function listPostbacks(ctx: AppContext, brandId: string, partnerId: string): Promise<PostbackRow[]> {
  await requirePartner(ctx, brandId, partnerId);
  return ctx.db.read
    .selectFrom('partner_postbacks')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .orderBy('id', 'desc')
    .execute();
}

async function checkPostbackInput(ctx: AppContext, brandId: string, partnerId: string, input: CreatePostbackBody) {
  await requirePartner(ctx, brandId, partnerId);
  const problem = httpUrlProblem(input.url);
  if (problem) throw InvalidError.at('url', problem);
  if (hasHostMacro(input.url)) throw InvalidError.at('url', HOST_MACRO_PROBLEM);
  await validateTargetUrl(ctx, input.url);
  // null (or absent) is every offer; any string, "" included, must be one of the brand's offers.
  if (input.offerId != null && !(await findOffer(ctx.db.read, brandId, input.offerId))) {
    throw InvalidError.at('offerId', UNKNOWN_OFFER);
  }
}

/** Changes a template in place (same id): sends queued before keep the URL they were queued with. */
export async function updatePostback(
  ctx: AppContext,
  brandId: string,
  partnerId: string,
  id: string,
  input: CreatePostbackBody,
): Promise<PostbackRow> {
  await checkPostbackInput(ctx, brandId, partnerId, input);
  const changes = { offer_id: input.offerId ?? null, url: input.url, events: JSON.stringify(input.events) };
  const row = await ctx.db.transact(async (trx) => {
    await trx
      .updateTable('partner_postbacks')
      .set(changes)
      .where('id', '=', id)
      .where('partner_id', '=', partnerId)
      .where('brand_id', '=', brandId)
      .execute();
    return trx
      .selectFrom('partner_postbacks')
      .selectAll()
      .where('id', '=', id)
      .where('partner_id', '=', partnerId)
      .where('brand_id', '=', brandId)
      .executeTakeFirst();
  });
  if (!row) throw new NotFoundError('Postback');
  return row;
}

export async function createPostback(
  ctx: AppContext,
  brandId: string,
  partnerId: string,
  input: CreatePostbackBody,
): Promise<PostbackRow> {
  await checkPostbackInput(ctx, brandId, partnerId, input);
  return ctx.db.transact(async (trx) => {
    // Count-then-insert is exact only if concurrent creations for the partner queue up: on
    // PostgreSQL lock the partner's row first (SQLite's write transaction already excludes
    // every other writer). NO KEY UPDATE: clicks and conversions referencing the partner
    // (KEY SHARE locks of their foreign keys) are not held up.
    if (ctx.db.dialect === 'postgres') {
      await trx.selectFrom('partners').select('id').where('id', '=', partnerId).forNoKeyUpdate().execute();
    }
    const count = await trx
      .selectFrom('partner_postbacks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_POSTBACKS_PER_PARTNER) {
      throw new InvalidError([
        // The path names the collection that is full: no field of the body is at fault.
        { path: 'postbacks', message: `a partner can have at most ${MAX_POSTBACKS_PER_PARTNER} postbacks` },
      ]);
    }
    const now = ctx.clock.now();
    const row: PostbackRow = {
      id: newId('pbk', now),
      brand_id: brandId,
      partner_id: partnerId,
      offer_id: input.offerId ?? null,
      url: input.url,
      events: JSON.stringify(input.events),
      created_at: now,
    };
    await trx.insertInto('partner_postbacks').values(row).execute();
    return row;
  });
}

/**
 * Deletes a template; its deliveries stay in the log. What was queued for it ends as a deleted
 * webhook subscription's does (deliveries/removal.ts): waiting ones `failed` now, one in
 * flight without a further retry, and no redelivery.
 */
export async function deletePostback(ctx: AppContext, brandId: string, partnerId: string, id: string): Promise<void> {
  await requirePartner(ctx, brandId, partnerId);
  await ctx.db.transact(async (trx) => {
    const result = await trx
      .deleteFrom('partner_postbacks')
      .where('id', '=', id)
      .where('partner_id', '=', partnerId)
      .where('brand_id', '=', brandId)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw new NotFoundError('Postback');
    await endDeliveriesOfRemovedTarget(trx, postbackTarget.kind, id, ctx.clock.now());
  });
}
