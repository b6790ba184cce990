/**
 * Webhooks as a delivery target: one delivery per subscription of the brand whose events take
 * the event (a name, `*` or `<group>.*`); sent as the stored envelope POSTed to the
 * subscription's current URL with the spec's headers, signed when the subscription has a
 * secret — with every secret still promised during a rotation. A disabled subscription's new deliveries are
 * parked, and its older ones wait (paused) until it is enabled again. Operational events
 * about a subscription go to the brand's other subscriptions only.
 */

import type { AppContext } from '../../context.js';
import { prepared } from '../../db/prepared.js';
import type { Queryable } from '../../db/types.js';
import type { DeliveryTarget } from '../deliveries/target.js';
import { SENDER_USER_AGENT } from '../deliveries/userAgent.js';
import { eventMatches } from '../events/schemas.js';
import { recordHealth } from './health.js';
import { earlierSecretsOf, type SigningColumns } from './repository.js';
import { computeSignature, signatureHeader } from './signature.js';

export interface SubscriptionDetails {
  url: string;
  secret: string | null;
  /**
   * During a rotation: the earlier secrets (at most two, newest first) and when each stops
   * signing (epoch ms), as its rotation promised.
   */
  earlierSecrets: Array<{ secret: string; expiresAt: number }>;
  rateLimitPerSecond: number | null;
}

const DETAIL_COLUMNS = [
  'id',
  'url',
  'secret',
  'previous_secret',
  'previous_secret_expires_at',
  'older_secret',
  'older_secret_expires_at',
  'rate_limit_per_second',
] as const;

const SUBSCRIPTION_COLUMNS = [...DETAIL_COLUMNS, 'brand_id', 'events', 'status'] as const;

/** A brand's subscriptions as fan-out sees them; a deleted one is disabled too, but must not collect parked deliveries. */
const liveSubscriptions = (q: Queryable) =>
  q.selectFrom('webhook_subscriptions').select(SUBSCRIPTION_COLUMNS).where('deleted_at', 'is', null);

const brandSubscriptions = prepared(1, (q, brandId: string) => liveSubscriptions(q).where('brand_id', '=', brandId));

/** The subscriptions of the events' brands: one prepared statement for the usual single brand. */
function subscriptionsOf(q: Queryable, brandIds: string[]) {
  if (brandIds.length === 1) return brandSubscriptions.execute(q, brandIds[0] as string);
  return liveSubscriptions(q).where('brand_id', 'in', brandIds).execute();
}

export function toDetails(row: SigningColumns): SubscriptionDetails {
  return {
    url: row.url,
    secret: row.secret,
    earlierSecrets: earlierSecretsOf(row),
    rateLimitPerSecond: row.rate_limit_per_second,
  };
}

/**
 * `X-Service-Signature`: `t=…,v1=<secret>` and, while a rotation lasts, a `,v1=…` with each
 * earlier secret whose promised time has not passed (as Svix signs with every valid secret).
 */
function signatureFor(details: SubscriptionDetails, attemptedAt: number, payload: string): string | null {
  if (!details.secret) return null;
  // Spec §5: t is the attempt's Unix time in seconds; every attempt is signed anew.
  const t = Math.floor(attemptedAt / 1000);
  let header = signatureHeader(details.secret, t, payload);
  for (const earlier of details.earlierSecrets) {
    if (attemptedAt < earlier.expiresAt) header += `,v1=${computeSignature(earlier.secret, t, payload)}`;
  }
  return header;
}

export const webhookTarget: DeliveryTarget<SubscriptionDetails, AppContext> = {
  kind: 'webhook',

  async plan(q, events) {
    const subscriptions = await subscriptionsOf(q, [...new Set(events.map((event) => event.brandId))]);
    return events.map((event) => {
      // An operational event about a subscription (webhook.subscription.*) is for the others.
      const about =
        event.type.startsWith('webhook.subscription.') && typeof event.data.subscriptionId === 'string'
          ? event.data.subscriptionId
          : null;
      return subscriptions
        .filter(
          (s) =>
            s.brand_id === event.brandId &&
            s.id !== about &&
            eventMatches(JSON.parse(s.events) as string[], event.type),
        )
        .map((s) => ({
          targetId: s.id,
          requestUrl: null,
          method: null,
          details: toDetails(s),
          parked: s.status === 'disabled',
        }));
    });
  },

  async details(q: Queryable, targetIds) {
    const rows = await q
      .selectFrom('webhook_subscriptions')
      .select([...DETAIL_COLUMNS])
      .where('id', 'in', targetIds)
      .where('status', '=', 'active')
      .execute();
    return new Map(rows.map((r) => [r.id, toDetails(r)]));
  },

  async pausedReason(q, targetId) {
    const row = await q
      .selectFrom('webhook_subscriptions')
      .select('deleted_at')
      .where('id', '=', targetId)
      .executeTakeFirst();
    // A deleted subscription cannot be enabled (its routes are 404): name what can be done.
    return row?.deleted_at != null
      ? 'Its subscription was deleted, and a deleted subscription is sent nothing more. To send the event ' +
          'to another subscription: POST /api/public/events/:id/resend with its subscriptionId.'
      : 'Its subscription is disabled: enable it first (PATCH /api/public/webhooks/:id {"status":"enabled"}).';
  },

  request(delivery, subscription, attemptedAt) {
    // Spelt as the spec spells them: header names are case-insensitive, but a hand-written
    // receiver may look them up as written.
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'User-Agent': SENDER_USER_AGENT,
      'X-Service-Event': delivery.event,
      'X-Service-Webhook-Id': delivery.id,
    };
    const signature = signatureFor(subscription, attemptedAt, delivery.payload);
    if (signature) headers['X-Service-Signature'] = signature;
    return { url: subscription.url, method: 'POST', headers, body: delivery.payload };
  },

  async removed(q, targetIds) {
    const rows = await q
      .selectFrom('webhook_subscriptions')
      .select('id')
      .where('id', 'in', targetIds)
      .where('deleted_at', 'is not', null)
      .execute();
    return new Set(rows.map((r) => r.id));
  },

  // An attempt in flight when its subscription was deleted is recorded; the engine then ends
  // a retry it would schedule (deliveries/removal.ts), after this hook in the same transaction.
  recorded: recordHealth,

  throttle: (details) => details.rateLimitPerSecond,
};
