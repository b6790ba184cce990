/**
 * A new delivery of an existing event to one target, outside fan-out: the events API's
 * resend (an event to a subscription that missed it, was added later, or wants it again).
 * It is an ordinary delivery — due now, unleased, announced after commit — so the engine
 * sends and retries it like any other: a new wh_ id, the event's own evt_ id and bytes.
 */
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/types.js';
import { newId } from '../../ids.js';
import { announceDeliveries } from './fanout.js';
import type { DeliveryRow } from './repository.js';

export async function queueDeliveryOf(
  ctx: AppContext,
  trx: Trx,
  event: { id: string; brandId: string; type: string },
  target: { kind: string; targetId: string },
): Promise<DeliveryRow> {
  const now = ctx.clock.now();
  const row: DeliveryRow = {
    id: newId('wh', now),
    brand_id: event.brandId,
    kind: target.kind,
    subscription_id: target.targetId,
    event_id: event.id,
    event: event.type,
    status: 'attempting',
    attempt_count: 0,
    attempt_base: 0,
    next_attempt_at: now,
    lease_until: null,
    lease_owner: null,
    target_url: null,
    method: null,
    created_at: now,
    updated_at: now,
    unrecorded_sends: 0,
    test: 0,
    resume_status: null,
    resume_at: null,
  };
  await trx.insertInto('webhook_deliveries').values(row).execute();
  await announceDeliveries(ctx, trx);
  return row;
}
