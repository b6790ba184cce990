/**
 * Shared pieces of the webhook tests: the tests' HTTP receiver (test/receiver.ts), a clock
 * that follows real time for the tests of the real-time loop (test/clock.ts), and small
 * helpers that create subscriptions and fire events through the public API.
 */
import assert from 'node:assert/strict';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import type { TestEnv } from '../helpers.js';

export { SystemTestClock } from '../clock.js';
export { type Answer, type ReceivedRequest, Receiver } from '../receiver.js';

/** Runs `during` with a dispatcher's loop running on `env` (polling every `pollMs`), then stops it. */
export async function whileDispatching(env: TestEnv, pollMs: number, during: () => Promise<void>): Promise<void> {
  const dispatcher = new Dispatcher(env.ctx, { pollMs });
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);
  try {
    await during();
  } finally {
    stop.abort();
    await running;
  }
}

export const ALL_EVENTS = [
  'conversion.created',
  'conversion.approved',
  'conversion.rejected',
  'partner.applied',
  'partner.approved',
  'partner.banned',
  'fraud.high_risk',
  'cap.reached',
  'payout.created',
  'payout.paid',
  'payout.cancelled',
  'webhook.subscription.failing',
  'webhook.subscription.disabled',
];

export interface SubscriptionView {
  id: string;
  url: string;
  events: string[];
  hasSecret: boolean;
  status: 'active' | 'disabled';
  createdAt: string;
}

/** POST /api/public/webhooks, asserting 201. */
export async function subscribe(
  env: TestEnv,
  body: { url: string; events?: string[]; secret?: string },
  key?: string,
): Promise<SubscriptionView> {
  const res = await env.request('POST', '/api/public/webhooks', {
    body: { events: ['partner.approved'], ...body },
    key,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

let partnerCounter = 0;

/** Creates an active partner through the API, which fires partner.approved. */
export async function firePartnerApproved(env: TestEnv, key?: string): Promise<string> {
  partnerCounter += 1;
  const res = await env.request('POST', '/api/v1/partners', {
    body: { name: `Partner ${partnerCounter}`, email: `p${partnerCounter}@example.com` },
    key,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** Records a conversion through the API (with a fresh offer and partner), which fires conversion.created. */
export async function fireConversionCreated(
  env: TestEnv,
  conversion: Record<string, unknown> = {},
  offer: Record<string, unknown> = {},
): Promise<{ id: string; offerId: string; partnerId: string }> {
  const offerRes = await env.request('POST', '/api/v1/offers', {
    body: { name: 'Offer', destinationUrl: 'https://shop.example/', ...offer },
  });
  assert.equal(offerRes.status, 201, JSON.stringify(offerRes.body));
  const partnerId = await firePartnerApproved(env);
  const res = await env.request('POST', '/api/v1/conversions', {
    body: { offerId: offerRes.body.id, partnerId, ...conversion },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.id, offerId: offerRes.body.id, partnerId };
}

/**
 * Leaves the target's deliveries as a worker does while their attempt is on the wire —
 * leased to `wkr_dying`, whose heartbeat is still fresh — as if it died right then.
 */
export async function leaseToDyingWorker(env: TestEnv, targetId: string): Promise<void> {
  const now = env.clock.now();
  await env.ctx.db.transact(async (trx) => {
    await trx.insertInto('delivery_workers').values({ id: 'wkr_dying', heartbeat_at: now, started_at: now }).execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({ status: 'attempting', lease_owner: 'wkr_dying', lease_until: now + 40_000 })
      .where('subscription_id', '=', targetId)
      .execute();
  });
}

/** Every delivery row of a subscription, oldest first. */
export function deliveriesOf(env: TestEnv, subscriptionId: string) {
  return env.ctx.db.read
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('id')
    .execute();
}

/** Removes every subscription, delivery and attempt, so each test starts from an empty log. */
export async function clearWebhooks(env: TestEnv): Promise<void> {
  await env.ctx.db.transact(async (trx) => {
    await trx.deleteFrom('webhook_attempts').execute();
    await trx.deleteFrom('webhook_deliveries').execute();
    await trx.deleteFrom('webhook_subscriptions').execute();
  });
}
