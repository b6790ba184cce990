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
  const now = event.createdAt;
  await trx
    .insertInto('webhook_deliveries')
    .values(
      matching.map((s) => ({
        id: newId('wh', now),
        brand_id: event.brandId,
        kind: 'webhook' as const,
        subscription_id: s.id,
        event_id: event.id,
        event: event.type,
        status: 'attempting' as const,
        attempt_count: 0,
        attempt_base: 0,
        next_attempt_at: now,
        lease_until: null,
        lease_owner: null,
        target_url: null,
        method: null,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  await announceDeliveries(ctx, trx);
  return matching.length;
}

/** Wakes dispatchers once `trx` commits: in this process directly, in others through NOTIFY. */
export async function announceDeliveries(ctx: AppContext, trx: Trx): Promise<void> {
  ctx.db.afterCommit(trx, () => ctx.deliveriesQueued.notify());
  if (ctx.db.dialect === 'postgres') await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
}
