/**
 * Fan-out, inside the event's own transaction: one delivery per active subscription of the
 * brand subscribed to the event. Nothing is queued in memory, so a crash at any point
 * leaves either no event and no deliveries, or both.
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import { newId } from '../../ids.js';
import type { RecordedEvent } from '../events/outbox.js';
import type { DeliveryRow } from './repository.js';

/** PostgreSQL channel the dispatchers LISTEN on; NOTIFY is delivered only on commit. */
export const DELIVERY_CHANNEL = 'affitrack_deliveries';

const activeSubscriptions = prepared(1, (q, brandId: string) =>
  q
    .selectFrom('webhook_subscriptions')
    .select(['id', 'events'])
    .where('brand_id', '=', brandId)
    .where('status', '=', 'active'),
);

export async function enqueueDeliveries(ctx: AppContext, trx: Trx, event: RecordedEvent): Promise<number> {
  const subscriptions = await activeSubscriptions.execute(trx, event.brandId);
  const matching = subscriptions.filter((s) => (JSON.parse(s.events) as string[]).includes(event.type));
  if (matching.length === 0) return 0;
  await insertDeliveries(
    trx,
    matching.map((s) => newDelivery(event, { kind: 'webhook', subscriptionId: s.id, targetUrl: null, method: null })),
  );
  await announceDeliveries(ctx, trx);
  return matching.length;
}

/** A delivery of `event`, due at once: a webhook to a subscription, or a postback send of a template. */
export function newDelivery(
  event: RecordedEvent,
  target: {
    kind: DeliveryRow['kind'];
    subscriptionId: string;
    targetUrl: string | null;
    method: DeliveryRow['method'];
  },
): DeliveryRow {
  const now = event.createdAt;
  return {
    id: newId('wh', now),
    brand_id: event.brandId,
    kind: target.kind,
    subscription_id: target.subscriptionId,
    event_id: event.id,
    event: event.type,
    status: 'attempting',
    attempt_count: 0,
    attempt_base: 0,
    next_attempt_at: now,
    lease_until: null,
    lease_owner: null,
    target_url: target.targetUrl,
    method: target.method,
    created_at: now,
    updated_at: now,
    unrecorded_sends: 0,
  };
}

export async function insertDeliveries(trx: Trx, rows: DeliveryRow[]): Promise<void> {
  if (rows.length > 0) await trx.insertInto('webhook_deliveries').values(rows).execute();
}

/** Wakes dispatchers once `trx` commits: in this process directly, in others through NOTIFY. */
export async function announceDeliveries(ctx: AppContext, trx: Trx): Promise<void> {
  ctx.db.afterCommit(trx, () => ctx.deliveriesQueued.notify());
  if (ctx.db.dialect === 'postgres') await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
}
