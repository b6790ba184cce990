/** The events API's queries. Ids sort by creation time, so time bounds are id bounds (one index range). */
import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { EventTable } from '../../db/schema.js';
import type { Queryable } from '../../db/types.js';
import { idAt } from '../../ids.js';
import type { ApiEvent } from './apiSchemas.js';

export type EventRow = Selectable<EventTable>;

export function eventToApi(row: EventRow): ApiEvent {
  const envelope = JSON.parse(row.payload) as { data?: Record<string, unknown> };
  return {
    id: row.id,
    event: row.type,
    createdAt: toIso(row.created_at),
    test: row.test === 1,
    data: envelope.data ?? {},
  };
}

export function findEvent(q: Queryable, brandId: string, id: string): Promise<EventRow | undefined> {
  return q.selectFrom('events').selectAll().where('id', '=', id).where('brand_id', '=', brandId).executeTakeFirst();
}

/** The brand's events, newest first; test sends' sample events are left out (they are in the delivery log). */
export function listEvents(
  q: Queryable,
  brandId: string,
  filter: { event?: string; since?: number; until?: number; cursor?: string; limit: number },
): Promise<EventRow[]> {
  let query = q.selectFrom('events').selectAll().where('brand_id', '=', brandId).where('test', '=', 0);
  if (filter.event) query = query.where('type', '=', filter.event);
  if (filter.since !== undefined) query = query.where('id', '>=', idAt('evt', filter.since));
  if (filter.until !== undefined) query = query.where('id', '<', idAt('evt', filter.until));
  if (filter.cursor) query = query.where('id', '<', filter.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}
