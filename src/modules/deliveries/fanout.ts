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
import type { Queryable, Trx } from '../../db/types.js';
import { newId } from '../../ids.js';
import { targetKey } from './claims.js';
import type { DeliverableEvent, DeliveryTarget, SendableDelivery } from './target.js';

/** PostgreSQL channel the dispatchers LISTEN on; NOTIFY is delivered only on commit. */
export const DELIVERY_CHANNEL = 'affitrack_deliveries';

export type DeliveryInsert = Omit<WebhookDeliveryTable, 'unrecorded_sends' | 'test' | 'resume_status' | 'resume_at'> & {
  unrecorded_sends: number;
};

/** A new delivery's columns, in the order they are inserted. */
export const DELIVERY_COLUMNS = [
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
] as const satisfies ReadonlyArray<keyof DeliveryInsert>;

const deliveryInsert = preparedInsert<DeliveryInsert>('webhook_deliveries', DELIVERY_COLUMNS);

/** The deliveries of one event, as rows to insert; those leased to this process wait for `settleDeliveries`. */
export interface EventDeliveries {
  rows: DeliveryInsert[];
  handed: Array<{ delivery: SendableDelivery; details: unknown }>;
  /** Target keys (targetKey) of rows to be sent that nobody took: dispatchers must be told (announceDeliveries). */
  unleased: string[];
}

/**
 * The deliveries `events` make (one entry per event, in order), read through `q`. Where this
 * process runs a dispatcher with room for the target, the row is leased to it already; the
 * caller must settle each entry with `settleDeliveries` once its rows are committed or not.
 */
export async function planDeliveries(
  ctx: AppContext,
  q: Queryable,
  events: readonly DeliverableEvent[],
): Promise<EventDeliveries[]> {
  const local = ctx.deliveries.localDispatch;
  const targets = [...ctx.deliveries.targets.values()];
  // Every read first, then the leases: nothing is reserved unless the whole plan is made.
  const plansOf: Array<Awaited<ReturnType<DeliveryTarget['plan']>>> = [];
  for (const target of targets) plansOf.push(await target.plan(q, events));
  const planned = events.map((): EventDeliveries => ({ rows: [], handed: [], unleased: [] }));
  targets.forEach((target, t) => {
    const plans = plansOf[t] ?? [];
    events.forEach((event, i) => {
      const now = event.createdAt;
      const entry = planned[i] as EventDeliveries;
      for (const plan of plans[i] ?? []) {
        // A parked delivery waits unscheduled; a throttled target's deliveries go through a
        // claim, which hands out its send slots (throttle.ts).
        const direct = !plan.parked && (target.throttle?.(plan.details) ?? null) === null;
        const lease = direct ? (local?.reserve(target.kind, plan.targetId, now) ?? null) : null;
        const row: DeliveryInsert = {
          id: newId('wh', now),
          brand_id: event.brandId,
          kind: target.kind,
          subscription_id: plan.targetId,
          event_id: event.id,
          event: event.type,
          status: plan.parked ? 'parked' : 'attempting',
          attempt_count: 0,
          attempt_base: 0,
          next_attempt_at: plan.parked ? null : now,
          lease_until: lease?.leaseUntil ?? null,
          lease_owner: lease?.owner ?? null,
          target_url: plan.requestUrl,
          method: plan.method,
          created_at: now,
          updated_at: now,
          // A lease taken here is a send about to happen, as a claim counts it.
          unrecorded_sends: lease ? 1 : 0,
        };
        entry.rows.push(row);
        if (!lease) {
          if (!plan.parked) entry.unleased.push(targetKey(target.kind, plan.targetId));
          continue;
        }
        entry.handed.push({
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
          details: plan.details,
        });
      }
    });
  });
  return planned;
}

/** Hands the leased rows of `planned` to this process's dispatcher once committed, or frees their places if not. */
export function settleDeliveries(ctx: AppContext, planned: EventDeliveries, committed: boolean): void {
  const local = ctx.deliveries.localDispatch;
  if (!local) return;
  for (const { delivery, details } of planned.handed) {
    if (committed) local.accept(delivery, details);
    else local.release(delivery.kind, delivery.targetId);
  }
}

/** Creates the event's deliveries in `trx`; returns how many. */
export async function queueDeliveries(ctx: AppContext, trx: Trx, event: DeliverableEvent): Promise<number> {
  const [planned] = await planDeliveries(ctx, trx, [event]);
  if (!planned) return 0;
  // Settled whatever happens next: a failed insert rolls the unit back and frees the leases.
  if (planned.handed.length > 0) {
    ctx.db.afterCommit(
      trx,
      () => settleDeliveries(ctx, planned, true),
      () => settleDeliveries(ctx, planned, false),
    );
  }
  for (const row of planned.rows) await deliveryInsert.execute(trx, row);
  if (planned.unleased.length > 0) await announceDeliveries(ctx, trx, planned.unleased);
  return planned.rows.length;
}

/**
 * Wakes dispatchers once `trx` commits: in this process directly, in others through NOTIFY.
 * `targets`: the keys of the deliveries' targets, when known (the local dispatcher need not
 * claim for targets whose lanes are full).
 */
export async function announceDeliveries(ctx: AppContext, trx: Trx, targets?: readonly string[]): Promise<void> {
  ctx.db.afterCommit(trx, () => ctx.deliveries.notify(targets));
  if (ctx.db.dialect === 'postgres') await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
}

/** Least time between two NOTIFYs for batches' deliveries (other processes also poll). */
const NOTIFY_GAP_MS = 50;
const nextNotify = new WeakMap<AppContext, { at: number; timer: NodeJS.Timeout | null }>();

/**
 * Wakes dispatchers for deliveries committed already (a batch's): in this process directly,
 * in others through NOTIFY — at most one per NOTIFY_GAP_MS, the last always sent, so a busy
 * stream of batches costs a few statements a second, and no batch waits for a poll.
 */
export function announceCommittedDeliveries(ctx: AppContext, targets: readonly string[]): void {
  ctx.deliveries.notify(targets);
  if (ctx.db.dialect !== 'postgres') return;
  let state = nextNotify.get(ctx);
  if (!state) {
    state = { at: 0, timer: null };
    nextNotify.set(ctx, state);
  }
  if (state.timer) return;
  const pending = state;
  const send = () => {
    pending.timer = null;
    pending.at = Date.now() + NOTIFY_GAP_MS;
    // The rows are committed: a lost NOTIFY only delays other processes until their next poll.
    sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(ctx.db.standaloneWriter).catch(() => {});
  };
  // At most one gap away, also when the wall clock was set back meanwhile.
  const wait = Math.min(pending.at - Date.now(), NOTIFY_GAP_MS);
  if (wait <= 0) send();
  else pending.timer = setTimeout(send, wait).unref();
}
