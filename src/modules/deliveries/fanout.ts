/**
 * Fan-out, inside the event's own transaction: every registered target kind says which
 * deliveries the event makes, and each becomes a row. Nothing is queued in memory before
 * the commit, so a crash at any point leaves either no event and no deliveries, or both.
 *
 * When this process runs a dispatcher with room for the target, the row is created already
 * leased to it and handed over once the transaction commits: the creating transaction is the
 * claim. Rows nobody took are announced instead — to the local claim loop, and on
 * PostgreSQL to other processes with NOTIFY (sent only then: a NOTIFY serialises commits).
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { preparedInsert } from '../../db/prepared.js';
import type { WebhookDeliveryTable } from '../../db/schema.js';
import type { Trx } from '../../db/types.js';
import { newId } from '../../ids.js';
import type { DeliverableEvent, SendableDelivery } from './target.js';

/** PostgreSQL channel the dispatchers LISTEN on; NOTIFY is delivered only on commit. */
export const DELIVERY_CHANNEL = 'affitrack_deliveries';

type DeliveryInsert = Omit<WebhookDeliveryTable, 'unrecorded_sends' | 'test' | 'resume_status' | 'resume_at'> & {
  unrecorded_sends: number;
};

const deliveryInsert = preparedInsert<DeliveryInsert>('webhook_deliveries', [
  'id',
  'brand_id',
  'kind',
  'subscription_id',
  'event_id',
  'event',
  'status',
  'attempt_count',
  'attempt_base',
  'next_attempt_at',
  'lease_until',
  'lease_owner',
  'target_url',
  'method',
  'created_at',
  'updated_at',
  'unrecorded_sends',
]);

/** Creates the event's deliveries in `trx`; returns how many. */
export async function queueDeliveries(ctx: AppContext, trx: Trx, event: DeliverableEvent): Promise<number> {
  const local = ctx.deliveries.localDispatch;
  const now = event.createdAt;
  let count = 0;
  let unleased = 0;
  const handed: Array<{ delivery: SendableDelivery; details: unknown }> = [];
  for (const target of ctx.deliveries.targets.values()) {
    for (const planned of await target.plan(trx, event)) {
      // A parked delivery waits unscheduled; a throttled target's deliveries go through a
      // claim, which hands out its send slots (throttle.ts).
      const direct = !planned.parked && (target.throttle?.(planned.details) ?? null) === null;
      const lease = direct ? (local?.reserve(target.kind, planned.targetId, now) ?? null) : null;
      const row: DeliveryInsert = {
        id: newId('wh', now),
        brand_id: event.brandId,
        kind: target.kind,
        subscription_id: planned.targetId,
        event_id: event.id,
        event: event.type,
        status: planned.parked ? 'parked' : 'attempting',
        attempt_count: 0,
        attempt_base: 0,
        next_attempt_at: planned.parked ? null : now,
        lease_until: lease?.leaseUntil ?? null,
        lease_owner: lease?.owner ?? null,
        target_url: planned.requestUrl,
        method: planned.method,
        created_at: now,
        updated_at: now,
        // A lease taken here is a send about to happen, as a claim counts it.
        unrecorded_sends: lease ? 1 : 0,
      };
      await deliveryInsert.execute(trx, row);
      count += 1;
      if (!lease) {
        if (!planned.parked) unleased += 1;
        continue;
      }
      handed.push({
        delivery: {
          id: row.id,
          kind: row.kind,
          targetId: row.subscription_id,
          brandId: row.brand_id,
          eventId: row.event_id,
          event: row.event,
          payload: event.payload,
          requestUrl: row.target_url,
          method: row.method,
          attemptCount: 0,
          attemptBase: 0,
          unrecordedSends: 1,
        },
        details: planned.details,
      });
    }
  }
  if (handed.length > 0 && local) {
    ctx.db.afterCommit(
      trx,
      () => {
        for (const { delivery, details } of handed) local.accept(delivery, details);
      },
      () => {
        for (const { delivery } of handed) local.release(delivery.kind, delivery.targetId);
      },
    );
  }
  if (unleased > 0) await announceDeliveries(ctx, trx);
  return count;
}

/** Wakes dispatchers once `trx` commits: in this process directly, in others through NOTIFY. */
export async function announceDeliveries(ctx: AppContext, trx: Trx): Promise<void> {
  ctx.db.afterCommit(trx, () => ctx.deliveries.notify());
  if (ctx.db.dialect === 'postgres') await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
}
