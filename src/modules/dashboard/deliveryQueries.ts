/**
 * The dashboard's reads of the delivery log: failing subscriptions for the overview, the log
 * itself with each delivery's last attempt and target, an event's exact payload, the events
 * of a conversion, a partner's postback sends; and "retry now". Scoped to the session's brand.
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/database.js';
import { idAt, timeOfId } from '../../ids.js';
import { announceDeliveries } from '../deliveries/fanout.js';
import type { AttemptRow, DeliveryRow } from '../webhooks/repository.js';

/**
 * Webhook subscriptions with failed or retrying deliveries since `sinceMs`, worst first.
 * The time bound is on the id (ids sort by creation time), and the partial index of failing
 * deliveries (migration 0023) covers the query, so it reads only the recent failing entries
 * of that index, never a brand's deliveries.
 */
export async function failingSubscriptions(q: Queryable, brandId: string, sinceMs: number, limit: number) {
  // Counted per subscription first, from the index alone; only the few subscriptions are joined.
  const failing = q
    .selectFrom('webhook_deliveries')
    .select((eb) => ['subscription_id', eb.fn.countAll<number>().as('failing'), eb.fn.max('updated_at').as('last_at')])
    .where('brand_id', '=', brandId)
    // Literal, as in the partial index of migration 0023 (which then holds every column read).
    .where(sql<boolean>`status in ('failed', 'retry_scheduled')`)
    .where('id', '>=', idAt('wh', sinceMs))
    .where('kind', '=', 'webhook')
    .groupBy('subscription_id');
  const rows = await q
    .selectFrom(failing.as('f'))
    .innerJoin('webhook_subscriptions as s', 's.id', 'f.subscription_id')
    .select(['s.id', 's.url', 's.status', 'f.failing', 'f.last_at'])
    .where('s.deleted_at', 'is', null)
    .orderBy('f.failing', 'desc')
    .orderBy('s.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, failing: Number(r.failing), last_at: Number(r.last_at) }));
}

export interface DeliveryLogFilter {
  status?: DeliveryRow['status'];
  kind?: DeliveryRow['kind'];
  event?: string;
  /** Subscription or postback template ids (a partner's templates). */
  targets?: string[];
  /** Delivery ids (a search: a `wh_` id, or the deliveries of an event or a conversion). */
  ids?: string[];
  fromMs?: number;
  toMs?: number;
  cursor?: string;
  limit: number;
}

/** The delivery log, newest first; date bounds are id bounds (ids sort by time). */
export function deliveryLog(q: Queryable, brandId: string, f: DeliveryLogFilter): Promise<DeliveryRow[]> {
  let query = q.selectFrom('webhook_deliveries').selectAll().where('brand_id', '=', brandId);
  if (f.ids) query = query.where('id', 'in', f.ids.length > 0 ? f.ids : ['']);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.kind) query = query.where('kind', '=', f.kind);
  if (f.event) query = query.where('event', '=', f.event);
  if (f.targets) query = query.where('subscription_id', 'in', f.targets.length > 0 ? f.targets : ['']);
  if (f.fromMs !== undefined) query = query.where('id', '>=', idAt('wh', f.fromMs));
  if (f.toMs !== undefined) query = query.where('id', '<', idAt('wh', f.toMs));
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

/**
 * The ids of the deliveries of some events (a search), read through the event index alone: a
 * handful of rows. Combined with the brand in one query, the planner may walk the brand's
 * whole log in id order instead.
 */
export async function deliveriesOfEvents(q: Queryable, eventIds: string[]): Promise<string[]> {
  if (eventIds.length === 0) return [];
  const rows = await q.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', eventIds).execute();
  return rows.map((r) => r.id);
}

/** The last attempt of each delivery (status code, latency, error for the log's rows). */
export async function lastAttempts(q: Queryable, deliveries: DeliveryRow[]): Promise<Map<string, AttemptRow>> {
  const tried = deliveries.filter((d) => d.attempt_count > 0);
  if (tried.length === 0) return new Map();
  const rows = await q
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      tried.map((d) => d.id),
    )
    .execute();
  const last = new Map<string, AttemptRow>();
  for (const a of rows) if ((last.get(a.delivery_id)?.number ?? -1) < a.number) last.set(a.delivery_id, a);
  return last;
}

/**
 * How far an event's id can be from the change that made it: both are written in one
 * transaction, milliseconds apart (and an id's time part only ever runs ahead of the clock,
 * never behind). Generous, so a slow transaction never hides one; still a few index entries,
 * not the brand's whole outbox.
 */
const SAME_TRANSACTION_MS = 10 * 60_000;

/**
 * Events of a conversion (a search by conversion id). Its events are written with its
 * changes: `conversion.created` with the conversion itself, `conversion.approved` or
 * `.rejected` when it was decided. Ids sort by time, so each is looked for in a short id range
 * from the moment of its change: a handful of events, however many the brand has.
 */
export async function conversionEventIds(q: Queryable, brandId: string, conversionId: string): Promise<string[]> {
  const conversion = await q
    .selectFrom('conversions')
    .select(['created_at', 'approved_at', 'rejected_at'])
    .where('id', '=', conversionId)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
  if (!conversion) return [];
  const moments = [
    timeOfId(conversionId) ?? conversion.created_at,
    conversion.approved_at,
    conversion.rejected_at,
  ].filter((t): t is number => t !== null);
  const rows = await q
    .selectFrom('events')
    .select('id')
    .where('brand_id', '=', brandId)
    .where((eb) =>
      eb.or(
        moments.map((t) =>
          eb.and([eb('id', '>=', idAt('evt', Number(t))), eb('id', '<', idAt('evt', Number(t) + SAME_TRANSACTION_MS))]),
        ),
      ),
    )
    .where('type', 'like', 'conversion.%')
    .where('payload', 'like', `%"conversionId":"${conversionId.replace(/[^A-Za-z0-9_]/g, '')}"%`)
    .limit(100)
    .execute();
  return rows.map((r) => r.id);
}

/** Brings a retrying delivery's next attempt forward to now; false when it is not retrying. */
export async function retryNow(ctx: AppContext, brandId: string, id: string): Promise<boolean> {
  return ctx.db.transact(async (trx) => {
    const result = await trx
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: ctx.clock.now() })
      .where('id', '=', id)
      .where('brand_id', '=', brandId)
      .where('status', '=', 'retry_scheduled')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await announceDeliveries(ctx, trx);
    return true;
  });
}

/** URLs of the webhook subscriptions and postback templates deliveries went to. */
export async function deliveryTargets(q: Queryable, brandId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const unique = [...new Set(ids)];
  const [subscriptions, postbacks] = await Promise.all([
    q
      .selectFrom('webhook_subscriptions')
      .select(['id', 'url'])
      .where('brand_id', '=', brandId)
      .where('id', 'in', unique)
      .execute(),
    q
      .selectFrom('partner_postbacks')
      .select(['id', 'url'])
      .where('brand_id', '=', brandId)
      .where('id', 'in', unique)
      .execute(),
  ]);
  return new Map([...subscriptions, ...postbacks].map((r) => [r.id, r.url]));
}

/** The latest sends of the given postback templates (a partner's), newest first. */
export function recentPostbackSends(q: Queryable, brandId: string, templateIds: string[], limit: number) {
  if (templateIds.length === 0) return Promise.resolve([]);
  return q
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('brand_id', '=', brandId)
    .where('kind', '=', 'postback')
    .where('subscription_id', 'in', templateIds)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The exact JSON a delivery sends (the stored event envelope). */
export async function eventPayload(q: Queryable, brandId: string, eventId: string): Promise<string | null> {
  const row = await q
    .selectFrom('events')
    .select('payload')
    .where('id', '=', eventId)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
  return row?.payload ?? null;
}

/** Ids of a partner's postback templates (its sends in the delivery log). */
export async function partnerPostbackIds(q: Queryable, brandId: string, partnerId: string): Promise<string[]> {
  const rows = await q
    .selectFrom('partner_postbacks')
    .select('id')
    .where('partner_id', '=', partnerId)
    .where('brand_id', '=', brandId)
    .execute();
  return rows.map((r) => r.id);
}
