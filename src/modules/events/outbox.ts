/**
 * The transactional outbox: every state change calls `recordEvent` inside its own
 * transaction, so the change and its event commit together or not at all. The envelope is
 * serialised once, here, and stored; every delivery sends exactly these bytes. The delivery
 * engine inserts the event's deliveries (webhooks, postbacks…) in the same transaction
 * (deliveries/fanout.ts).
 */
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { preparedInsert } from '../../db/prepared.js';
import type { EventTable } from '../../db/schema.js';
import type { Trx } from '../../db/types.js';
import { newId } from '../../ids.js';
import { queueDeliveries } from '../deliveries/fanout.js';
import type { EventData, EventName } from './schemas.js';

export interface RecordedEvent<E extends EventName = EventName> {
  id: string;
  type: E;
  brandId: string;
  payload: string;
  createdAt: number;
}

const eventInsert = preparedInsert<Omit<EventTable, 'test'>>('events', [
  'id',
  'brand_id',
  'type',
  'payload',
  'created_at',
]);

export async function recordEvent<E extends EventName>(
  ctx: AppContext,
  trx: Trx,
  brandId: string,
  type: E,
  data: EventData<E>,
): Promise<RecordedEvent<E>> {
  const createdAt = ctx.clock.now();
  const id = newId('evt', createdAt);
  // Key order follows the spec's envelope table: id, event, createdAt, brandId, data.
  const payload = JSON.stringify({ id, event: type, createdAt: toIso(createdAt), brandId, data });
  await eventInsert.execute(trx, { id, brand_id: brandId, type, payload, created_at: createdAt });
  // Two literals rather than `{ ...event, data }`, which costs V8 far more (see facts.ts).
  await queueDeliveries(ctx, trx, { id, type, brandId, payload, createdAt, data });
  return { id, type, brandId, payload, createdAt };
}
