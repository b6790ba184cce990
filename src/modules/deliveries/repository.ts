/** The delivery log's queries: deliveries of every target kind, and their attempts. */
import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { WebhookAttemptTable, WebhookDeliveryTable } from '../../db/schema.js';
import type { Queryable } from '../../db/types.js';
import { DEAD_AFTER_MS } from './heartbeat.js';
import type { Attempt, Delivery, DeliveryWithAttempts } from './schemas.js';

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
    test: row.test === 1,
    createdAt: toIso(row.created_at),
  };
}

const headersOf = (json: string | null): Record<string, string> | null =>
  json === null ? null : (JSON.parse(json) as Record<string, string>);

export function attemptToApi(row: AttemptRow): Attempt {
  return {
    number: row.number,
    attemptedAt: toIso(row.attempted_at),
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    responseBody: row.response_body,
    error: row.error,
    requestUrl: row.request_url,
    requestMethod: row.request_method,
    requestHeaders: headersOf(row.request_headers),
    responseHeaders: headersOf(row.response_headers),
  };
}

/**
 * A delivery as the log shows it: its attempts and the body they sent (the event's stored
 * envelope; none for a GET, as postbacks are sent).
 */
export function deliveryDetailToApi(row: DeliveryRow, payload: string, attempts: AttemptRow[]): DeliveryWithAttempts {
  const method = attempts.at(-1)?.request_method ?? row.method;
  return {
    ...deliveryToApi(row),
    requestBody: method === 'GET' ? null : payload,
    attempts: attempts.map(attemptToApi),
  };
}

/** One delivery with its event's payload and attempts, brand-scoped; undefined when not the brand's. */
export async function findDeliveryDetail(
  q: Queryable,
  brandId: string,
  id: string,
): Promise<DeliveryWithAttempts | undefined> {
  const row = await findDelivery(q, brandId, id);
  if (!row) return undefined;
  const [event, attempts] = await Promise.all([
    q.selectFrom('events').select('payload').where('id', '=', row.event_id).executeTakeFirst(),
    listAttempts(q, row.id),
  ]);
  return deliveryDetailToApi(row, event?.payload ?? '', attempts);
}

/** Every delivery of an event, oldest first, each with its attempts. */
export async function listDeliveriesOfEvent(
  q: Queryable,
  brandId: string,
  eventId: string,
  payload: string,
): Promise<DeliveryWithAttempts[]> {
  const rows = await q
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('event_id', '=', eventId)
    .where('brand_id', '=', brandId)
    .orderBy('id')
    .execute();
  if (rows.length === 0) return [];
  const attempts = await q
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('delivery_id')
    .orderBy('number')
    .execute();
  return rows.map((row) =>
    deliveryDetailToApi(
      row,
      payload,
      attempts.filter((a) => a.delivery_id === row.id),
    ),
  );
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

/**
 * Deletes a target's deliveries and their attempts (the target is being deleted for good; a
 * webhook subscription is soft-deleted instead, see `finishDeliveriesOf`).
 */
export async function deleteDeliveriesOf(q: Queryable, kind: string, targetId: string): Promise<void> {
  const deliveries = q
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('subscription_id', '=', targetId)
    .where('kind', '=', kind);
  await q.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).execute();
  await q.deleteFrom('webhook_deliveries').where('subscription_id', '=', targetId).where('kind', '=', kind).execute();
}

/**
 * A soft-deleted target's waiting deliveries end as `failed` (nothing will send them again);
 * its finished ones stay in the log as they are. Waiting means scheduled (a
 * `next_attempt_at`) or parked: parked rows have no time, and left alone they would stay
 * `parked` for ever, waiting for an enable that a deleted subscription cannot get.
 *
 * A delivery leased to a living worker is not waiting: its attempt may be on the wire, and
 * the receiver may accept it. It is left to its lease, so the attempt is recorded and the
 * delivery ends as its outcome says (the target kind turns a retry it would schedule into
 * `failed`, see webhooks/target.ts). Taking the lease away here dropped the attempt: the log
 * said "failed, never attempted" for an event the receiver had processed. A lease whose owner
 * is dead (no heartbeat, heartbeat.ts) will never be completed: that delivery ends now.
 */
export async function finishDeliveriesOf(q: Queryable, kind: string, targetId: string, now: number): Promise<void> {
  await q
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, lease_until: null, lease_owner: null, updated_at: now })
    .where('subscription_id', '=', targetId)
    .where('kind', '=', kind)
    .where((eb) => eb.or([eb('next_attempt_at', 'is not', null), eb('status', '=', 'parked')]))
    .where((eb) =>
      eb.or([
        eb('lease_until', 'is', null),
        eb('lease_until', '<=', now),
        eb(
          'lease_owner',
          'not in',
          eb
            .selectFrom('delivery_workers')
            .select('id')
            .where('heartbeat_at', '>', now - DEAD_AFTER_MS),
        ),
      ]),
    )
    .execute();
}
