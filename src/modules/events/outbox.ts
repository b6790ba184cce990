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

export type EventInsert = Omit<EventTable, 'test'>;
export const EVENT_COLUMNS = ['id', 'brand_id', 'type', 'payload', 'created_at'] as const satisfies ReadonlyArray<
  keyof EventInsert
>;
const eventInsert = preparedInsert<EventInsert>('events', EVENT_COLUMNS);

/** An event as it will be stored: its id, and its envelope serialised once. */
export function eventEnvelope<E extends EventName>(
  ctx: AppContext,
  brandId: string,
  type: E,
  data: EventData<E>,
): RecordedEvent<E> {
  const createdAt = ctx.clock.now();
  const id = newId('evt', createdAt);
  // Key order follows the spec's envelope table: id, event, createdAt, brandId, data.
  const payload = JSON.stringify({ id, event: type, createdAt: toIso(createdAt), brandId, data });
  return { id, type, brandId, payload, createdAt };
}

/**
 * Stores the event and its deliveries in `trx`. `subject` is the row the event is about, as
 * `trx` writes it, when the caller has it (see DeliverableEvent).
 */
export async function recordEvent<E extends EventName>(
  ctx: AppContext,
  trx: Trx,
  brandId: string,
  type: E,
  data: EventData<E>,
  subject?: Readonly<Record<string, unknown>>,
): Promise<RecordedEvent<E>> {
  const event = eventEnvelope(ctx, brandId, type, data);
  const { id, payload, createdAt } = event;
  await eventInsert.execute(trx, { id, brand_id: brandId, type, payload, created_at: createdAt });
  // A literal rather than `{ ...event, data }`, which costs V8 far more (see facts.ts).
  await queueDeliveries(ctx, trx, { id, type, brandId, payload, createdAt, data, subject });
  return event;
}
