/**
 * Partner postbacks (outbound): URL templates per partner, global or per offer. When a
 * conversion event commits, each matching template becomes a delivery of kind 'postback'
 * in the same transaction, sent by the webhook dispatcher (same time-out, retries, SSRF
 * guard and delivery log).
 */
import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { PartnerPostbackTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors.js';
import { newId } from '../../ids.js';
import type { ConversionRow } from '../conversions/repository.js';
import type { RecordedEvent } from '../events/outbox.js';
import { findOffer } from '../offers/repository.js';
import { findPartner } from '../partners/repository.js';
import { isHttpUrl } from '../urls.js';
import { announceDeliveries, insertDeliveries, newDelivery } from '../webhooks/fanout.js';
import { validateTargetUrl } from '../webhooks/service.js';
import { fillPostbackMacros } from './macros.js';
import type { CreatePostbackBody, Postback, PostbackEvent } from './schemas.js';

/** Templates per partner at most. */
export const MAX_POSTBACKS_PER_PARTNER = 20;

export type PostbackRow = Selectable<PartnerPostbackTable>;

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
  if (!partner) throw ApiError.notFound('Partner');
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
  if (!isHttpUrl(input.url)) throw ApiError.validation([{ path: 'url', message: 'must be an absolute http(s) URL' }]);
  // Macros may fill the path and query, never the host: the host is what the SSRF guard checks.
  const { hostname } = new URL(input.url);
  if (/[{}]|%7b|%7d/i.test(hostname)) {
    throw ApiError.validation([{ path: 'url', message: 'macros are allowed in the path and query only' }]);
  }
  await validateTargetUrl(ctx, input.url);
  if (input.offerId && !(await findOffer(ctx.db.read, brandId, input.offerId))) {
    throw ApiError.validation([{ path: 'offerId', message: 'no offer with this id' }]);
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
  if (!row) throw ApiError.notFound('Postback');
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
    const count = await trx
      .selectFrom('partner_postbacks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_POSTBACKS_PER_PARTNER) {
      throw ApiError.validation([
        { path: '', message: `a partner can have at most ${MAX_POSTBACKS_PER_PARTNER} postbacks` },
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

export async function deletePostback(ctx: AppContext, brandId: string, partnerId: string, id: string): Promise<void> {
  await requirePartner(ctx, brandId, partnerId);
  const result = await ctx.db.transact((trx) =>
    trx
      .deleteFrom('partner_postbacks')
      .where('id', '=', id)
      .where('partner_id', '=', partnerId)
      .where('brand_id', '=', brandId)
      .executeTakeFirst(),
  );
  if (Number(result.numDeletedRows) === 0) throw ApiError.notFound('Postback');
}

const postbacksOfPartner = prepared(1, (q, partnerId: string) =>
  q.selectFrom('partner_postbacks').selectAll().where('partner_id', '=', partnerId),
);

/**
 * Queues the partner's postbacks for a conversion event, in the event's transaction. For
 * each event, templates for the conversion's offer win over the partner's global ones.
 */
export async function queuePartnerPostbacks(
  ctx: AppContext,
  trx: Trx,
  conversion: ConversionRow,
  event: RecordedEvent & { type: PostbackEvent },
): Promise<number> {
  const templates = await postbacksOfPartner.execute(trx, conversion.partner_id);
  const forEvent = templates.filter(
    (t) =>
      (t.offer_id === null || t.offer_id === conversion.offer_id) &&
      (JSON.parse(t.events) as string[]).includes(event.type),
  );
  const specific = forEvent.filter((t) => t.offer_id !== null);
  const chosen = specific.length > 0 ? specific : forEvent;
  if (chosen.length === 0) return 0;
  await insertDeliveries(
    trx,
    chosen.map((t) =>
      newDelivery(event, {
        kind: 'postback',
        subscriptionId: t.id,
        targetUrl: fillPostbackMacros(t.url, conversion),
        method: 'GET',
      }),
    ),
  );
  await announceDeliveries(ctx, trx);
  return chosen.length;
}
