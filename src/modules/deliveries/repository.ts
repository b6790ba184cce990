/** The delivery log's queries: deliveries of every target kind, and their attempts. */
import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { WebhookAttemptTable, WebhookDeliveryTable } from '../../db/schema.js';
import type { Queryable } from '../../db/types.js';
import type { Delivery } from './schemas.js';

export type DeliveryRow = Selectable<WebhookDeliveryTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

export function deliveryToApi(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    kind: row.kind as Delivery['kind'],
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
  if (filter.kind) query = query.where('kind', '=', filter.kind);
  if (filter.cursor) query = query.where('id', '<', filter.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}

export function listAttempts(q: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  return q.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('number').execute();
}

/** Deletes a target's deliveries and their attempts (the target is being deleted). */
export async function deleteDeliveriesOf(q: Queryable, kind: string, targetId: string): Promise<void> {
  const deliveries = q
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('subscription_id', '=', targetId)
    .where('kind', '=', kind);
  await q.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).execute();
  await q.deleteFrom('webhook_deliveries').where('subscription_id', '=', targetId).where('kind', '=', kind).execute();
}
