/**
 * The partner's postbacks as the portal uses them: their URL templates, a test send and
 * their delivery log. Everything goes through this one file so the delivery engine behind
 * it (today postbacks/ and webhooks/) can be swapped by changing only these functions.
 */
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import type { AttemptOutcome } from '../deliveries/sender.js';
import { findOffer } from '../offers/repository.js';
import type { CreatePostbackBody } from '../postbacks/schemas.js';
import {
  createPostback,
  deletePostback,
  listPostbacks,
  type PostbackRow,
  UNKNOWN_OFFER,
} from '../postbacks/service.js';
import { sendTestPostback as sendTemplateOnce } from '../postbacks/testSend.js';
import type { PartnerScope } from './partnerData.js';

export function listPartnerPostbacks(ctx: AppContext, scope: PartnerScope): Promise<PostbackRow[]> {
  return listPostbacks(ctx, scope.brandId, scope.partnerId);
}

/**
 * A partner attaches a postback to an offer open to it (an active one) or to all its offers.
 * Another offer is refused as an unknown one: a partner learns no paused or archived offer.
 */
export async function addPartnerPostback(ctx: AppContext, scope: PartnerScope, input: CreatePostbackBody) {
  if (input.offerId != null && (await findOffer(ctx.db.read, scope.brandId, input.offerId))?.status !== 'active') {
    throw InvalidError.at('offerId', UNKNOWN_OFFER);
  }
  return createPostback(ctx, scope.brandId, scope.partnerId, input);
}

export function removePartnerPostback(ctx: AppContext, scope: PartnerScope, id: string): Promise<void> {
  return deletePostback(ctx, scope.brandId, scope.partnerId, id);
}

/** Sends one of the partner's templates once, now, with test values (postbacks/testSend.ts). */
export function sendTestPostback(
  ctx: AppContext,
  scope: PartnerScope,
  postbackId: string,
): Promise<{ url: string; outcome: AttemptOutcome } | null> {
  return sendTemplateOnce(ctx, scope.brandId, scope.partnerId, postbackId);
}

export interface PostbackLogEntry {
  id: string;
  postbackId: string;
  event: string;
  status: string;
  url: string | null;
  createdAt: number;
  attemptCount: number;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
}

/** The partner's postback sends, newest first, each with its latest attempt. */
export async function partnerPostbackLog(
  ctx: AppContext,
  scope: PartnerScope,
  page: { cursor?: string; limit: number },
): Promise<PostbackLogEntry[]> {
  const q = ctx.db.read;
  let query = q
    .selectFrom('webhook_deliveries as d')
    .innerJoin('partner_postbacks as p', 'p.id', 'd.subscription_id')
    .select(['d.id', 'd.subscription_id', 'd.event', 'd.status', 'd.target_url', 'd.created_at', 'd.attempt_count'])
    .where('d.kind', '=', 'postback')
    .where('d.brand_id', '=', scope.brandId)
    .where('p.partner_id', '=', scope.partnerId);
  if (page.cursor) query = query.where('d.id', '<', page.cursor);
  const deliveries = await query
    .orderBy('d.id', 'desc')
    .limit(page.limit + 1)
    .execute();
  const ids = deliveries.map((d) => d.id);
  const attempts =
    ids.length === 0
      ? []
      : await q
          .selectFrom('webhook_attempts')
          .selectAll()
          .where('delivery_id', 'in', ids)
          .orderBy('number', 'desc')
          .execute();
  const latest = new Map<string, (typeof attempts)[number]>();
  for (const a of attempts) if (!latest.has(a.delivery_id)) latest.set(a.delivery_id, a);
  return deliveries.map((d) => {
    const a = latest.get(d.id);
    return {
      id: d.id,
      postbackId: d.subscription_id,
      event: d.event,
      status: d.status,
      url: d.target_url,
      createdAt: d.created_at,
      attemptCount: d.attempt_count,
      lastStatusCode: a?.status_code ?? null,
      lastLatencyMs: a?.latency_ms ?? null,
      lastResponseBody: a?.response_body ?? null,
      lastError: a?.error ?? null,
    };
  });
}
