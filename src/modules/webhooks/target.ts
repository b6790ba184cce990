/**
 * Webhooks as a delivery target: one delivery per active subscription of the brand to the
 * event; sent as the stored envelope POSTed to the subscription's current URL with the
 * spec's headers, signed when the subscription has a secret. A disabled subscription is
 * paused: its deliveries wait until it is enabled again.
 */

import { prepared } from '../../db/prepared.js';
import type { Queryable } from '../../db/types.js';
import type { DeliveryTarget } from '../deliveries/target.js';
import { signatureHeader } from './signature.js';

const USER_AGENT = 'Affitrack-Webhooks/1.0';

interface SubscriptionDetails {
  url: string;
  secret: string | null;
}

const activeSubscriptions = prepared(1, (q, brandId: string) =>
  q
    .selectFrom('webhook_subscriptions')
    .select(['id', 'events', 'url', 'secret'])
    .where('brand_id', '=', brandId)
    .where('status', '=', 'active'),
);

export const webhookTarget: DeliveryTarget<SubscriptionDetails> = {
  kind: 'webhook',

  async plan(trx, event) {
    const subscriptions = await activeSubscriptions.execute(trx, event.brandId);
    return subscriptions
      .filter((s) => (JSON.parse(s.events) as string[]).includes(event.type))
      .map((s) => ({ targetId: s.id, requestUrl: null, method: null, details: { url: s.url, secret: s.secret } }));
  },

  async details(q: Queryable, targetIds) {
    const rows = await q
      .selectFrom('webhook_subscriptions')
      .select(['id', 'url', 'secret'])
      .where('id', 'in', targetIds)
      .where('status', '=', 'active')
      .execute();
    return new Map(rows.map((r) => [r.id, { url: r.url, secret: r.secret }]));
  },

  request(delivery, subscription, attemptedAt) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'x-service-event': delivery.event,
      'x-service-webhook-id': delivery.id,
    };
    if (subscription.secret) {
      // Spec §5: t is the attempt's Unix time in seconds; every attempt is signed anew.
      headers['x-service-signature'] = signatureHeader(
        subscription.secret,
        Math.floor(attemptedAt / 1000),
        delivery.payload,
      );
    }
    return { url: subscription.url, method: 'POST', headers, body: delivery.payload };
  },
};
