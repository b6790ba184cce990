import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { WebhookAttemptTable, WebhookDeliveryTable, WebhookSubscriptionTable } from '../../db/schema.js';
import { parseMetadata } from '../metadata.js';
import type { Delivery, Subscription } from './schemas.js';

export type SubscriptionRow = Selectable<WebhookSubscriptionTable>;
export type DeliveryRow = Selectable<WebhookDeliveryTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

export function subscriptionToApi(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    hasSecret: row.secret !== null,
    status: row.status,
    metadata: parseMetadata(row.metadata),
    createdAt: toIso(row.created_at),
  };
}

export function deliveryToApi(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    kind: row.kind,
    subscriptionId: row.subscription_id,
    eventId: row.event_id,
    event: row.event,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: toIsoOrNull(row.next_attempt_at),
    createdAt: toIso(row.created_at),
  };
}

export function attemptToApi(row: AttemptRow) {
  return {
    number: row.number,
    attemptedAt: toIso(row.attempted_at),
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    responseBody: row.response_body,
    error: row.error,
  };
}

export function findSubscription(q: Queryable, brandId: string, id: string): Promise<SubscriptionRow | undefined> {
  return q
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('id', '=', id)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
}

export function listSubscriptions(
  q: Queryable,
  brandId: string,
  page: { cursor?: string; limit: number },
): Promise<SubscriptionRow[]> {
  let query = q.selectFrom('webhook_subscriptions').selectAll().where('brand_id', '=', brandId);
  if (page.cursor) query = query.where('id', '<', page.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

export function findDelivery(q: Queryable, brandId: string, id: string): Promise<DeliveryRow | undefined> {
  return q
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
}

export function listDeliveries(
  q: Queryable,
  brandId: string,
  filter: { subscriptionId?: string; status?: string; kind?: string; cursor?: string; limit: number },
): Promise<DeliveryRow[]> {
  let query = q.selectFrom('webhook_deliveries').selectAll().where('brand_id', '=', brandId);
  if (filter.subscriptionId) query = query.where('subscription_id', '=', filter.subscriptionId);
  if (filter.status) query = query.where('status', '=', filter.status as DeliveryRow['status']);
  if (filter.kind) query = query.where('kind', '=', filter.kind as DeliveryRow['kind']);
  if (filter.cursor) query = query.where('id', '<', filter.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}

export function listAttempts(q: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  return q.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('number').execute();
}
