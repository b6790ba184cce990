/**
 * A test send of a webhook subscription (issue #20, point 8): the catalogue's example of one
 * event, in a fresh envelope of this brand, signed with the subscription's secret and sent
 * once, now — at its subscription's next send slot when it has a rate limit — through the
 * delivery engine's sender (time-out, SSRF guard, capped answer). It
 * is recorded in the log as a test event with one test delivery and its attempt, written
 * after the send (no transaction is open during the HTTP call); it is never retried.
 */
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { targetKey } from '../deliveries/claims.js';
import { attemptInsert, decideNext, exchangeColumns, storableText } from '../deliveries/completion.js';
import { type DeliveryRow, deliveryDetailToApi } from '../deliveries/repository.js';
import type { DeliveryWithAttempts } from '../deliveries/schemas.js';
import { Sender } from '../deliveries/sender.js';
import { waitForSendSlot } from '../deliveries/throttle.js';
import type { EventName } from '../events/schemas.js';
import { eventCatalogue } from './catalogue.js';
import { findSubscription } from './repository.js';
import { toDetails, webhookTarget } from './target.js';

const examples = new Map(eventCatalogue().data.map((entry) => [entry.name, entry.example.data]));

export async function sendTestWebhook(
  ctx: AppContext,
  brandId: string,
  subscriptionId: string,
  event: EventName,
): Promise<DeliveryWithAttempts> {
  const subscription = await findSubscription(ctx.db.read, brandId, subscriptionId);
  if (!subscription) throw new NotFoundError('Subscription');
  // A receiver's rate limit covers test sends too: it may protect an upstream quota. The wait
  // is short (slots are booked at most SLOT_HORIZON_MS ahead: two seconds at 1/s), beside the
  // send's own time-out, so the answer stays synchronous.
  if (subscription.rate_limit_per_second !== null) {
    await waitForSendSlot(ctx, targetKey(webhookTarget.kind, subscription.id), subscription.rate_limit_per_second);
  }
  const now = ctx.clock.now();
  const eventId = newId('evt', now);
  const payload = JSON.stringify({
    id: eventId,
    event,
    createdAt: toIso(now),
    brandId,
    data: examples.get(event) ?? {},
  });
  const delivery: DeliveryRow = {
    id: newId('wh', now),
    brand_id: brandId,
    kind: webhookTarget.kind,
    subscription_id: subscription.id,
    event_id: eventId,
    event,
    status: 'attempting',
    attempt_count: 0,
    attempt_base: 0,
    next_attempt_at: null,
    lease_until: null,
    lease_owner: null,
    target_url: null,
    method: null,
    created_at: now,
    updated_at: now,
    unrecorded_sends: 0,
    test: 1,
    resume_status: null,
    resume_at: null,
  };
  // The webhook target builds the request, so a test is signed exactly as a real delivery.
  const outgoing = webhookTarget.request(
    {
      id: delivery.id,
      kind: delivery.kind,
      targetId: subscription.id,
      brandId,
      eventId,
      event,
      payload,
      requestUrl: null,
      method: null,
      attemptCount: 0,
      attemptBase: 0,
      unrecordedSends: 0,
    },
    // Signed as a real delivery would be now, with every secret still signing during a rotation.
    toDetails(subscription),
    now,
  );
  const sender = new Sender(ctx.config.webhookTimeoutMs, ctx.config.webhookAllowPrivateNetworks);
  let outcome: Awaited<ReturnType<Sender['send']>>;
  try {
    outcome = await sender.send(outgoing);
  } finally {
    await sender.close();
  }
  // One attempt is the whole test: 2xx succeeded, anything else failed (never retried).
  const status = decideNext(outcome, 1, now, [], 1).status;
  const finished: DeliveryRow = { ...delivery, status, attempt_count: 1, updated_at: ctx.clock.now() };
  const attempt = {
    delivery_id: delivery.id,
    number: 1,
    attempted_at: now,
    status_code: outcome.statusCode,
    latency_ms: outcome.latencyMs,
    response_body: storableText(outcome.responseBody),
    error: storableText(outcome.error),
    ...exchangeColumns(outcome),
  };
  await ctx.db.transact(async (trx) => {
    await trx
      .insertInto('events')
      .values({ id: eventId, brand_id: brandId, type: event, payload, created_at: now, test: 1 })
      .execute();
    await trx.insertInto('webhook_deliveries').values(finished).execute();
    await attemptInsert.execute(trx, attempt);
  });
  return deliveryDetailToApi(finished, payload, [attempt]);
}
