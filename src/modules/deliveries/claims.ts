/**
 * Claiming due deliveries. A claim marks due deliveries with a lease (owner + expiry); the
 * UPDATE re-checks the lease, so when two workers pick the same row only one gets it
 * (PostgreSQL re-evaluates the condition after the row lock; SQLite has a single writer).
 * A lease ends when it expires or, sooner, when its owner's heartbeat stops
 * (heartbeat.ts): a killed worker's deliveries are taken over within seconds, a slow but
 * living worker keeps its own. Most deliveries are never claimed here: the transaction that
 * creates them leases them to the process that committed it (fanout.ts); claiming is for
 * retries, redeliveries, other processes' work and whatever the local queues could not take.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { prepared } from '../../db/prepared.js';
import type { Trx } from '../../db/types.js';
import { DEAD_AFTER_MS, recordHeartbeat } from './heartbeat.js';
import { removedTargets } from './removal.js';
import { finishDeliveriesOf } from './repository.js';
import { type DeliveryTarget, type SendableDelivery, targetKey } from './target.js';
import { reserveSendSlots, slotInterval } from './throttle.js';

export interface ClaimOptions {
  owner: string;
  /** Deliveries to claim at most (free global slots). */
  limit: number;
  leaseMs: number;
  /** Targets (`kind:targetId` keys, see targetKey) not to claim for: their slots are full. */
  excludeTargets?: string[];
  /** Deliveries to claim at most for one target (its free slots); default `limit`. */
  slotsFor?: (key: string) => number;
  /** Send-time details of the claimed deliveries' targets; by kind, then target id. */
  onDetails?: (kind: string, details: Map<string, unknown>) => void;
  /** Whether to write the owner's heartbeat in the claim (the dispatcher does when its last beat is old). */
  beat?: boolean;
  /** Called when due deliveries were left unclaimed for want of slots: claim again when one frees. */
  onLeftForSlots?: (key: string) => void;
  /**
   * How far ahead to look for deliveries coming due (ms; default 0): none is claimed early,
   * but onNextDue hears when the first comes due, so a claim loop can wake right then.
   */
  lookAheadMs?: number;
  onNextDue?: (at: number) => void;
}

export { targetKey } from './target.js';

/** Targets with unfinished deliveries: a loose index scan, one probe per target. */
const TARGETS_WITH_WORK = sql<{ id: string }>`
  with recursive subs(id) as (
    select min(subscription_id) from webhook_deliveries where next_attempt_at is not null
    union all
    select (select min(subscription_id) from webhook_deliveries
            where next_attempt_at is not null and subscription_id > subs.id)
    from subs where subs.id is not null
  )
  select id from subs where id is not null`;

const dueOfTarget = prepared(
  6,
  (q, targetId: string, now: number, until: number, aliveSince: number, owner: string, limit: number) => {
    const due = q
      .selectFrom('webhook_deliveries')
      .select(['id', 'kind', 'next_attempt_at'])
      .where('subscription_id', '=', targetId)
      .where('next_attempt_at', '<=', until)
      .where((eb) =>
        eb.or([
          eb('lease_until', 'is', null),
          eb('lease_until', '<=', now),
          // The owner is dead (silent), and it is not the claimer, whose leases are in flight.
          eb.and([
            eb('lease_owner', '<>', owner),
            eb(
              'lease_owner',
              'not in',
              eb.selectFrom('delivery_workers').select('id').where('heartbeat_at', '>', aliveSince),
            ),
          ]),
        ]),
      )
      .orderBy('next_attempt_at')
      .limit(limit);
    // PostgreSQL: rows another worker is claiming right now are skipped, so concurrent
    // workers share a target's backlog instead of queueing on the same rows.
    return q.getExecutor().adapter instanceof PostgresAdapter ? due.forUpdate().skipLocked() : due;
  },
);

/**
 * Claims due deliveries target by target, each up to its free slots, so a receiver with a
 * large backlog (dead, slow or paused) costs one index probe, never a scan of its backlog.
 * Deliveries of a paused target (one its kind leaves out of `details`) wait.
 */
export async function claimDueDeliveries(ctx: AppContext, options: ClaimOptions): Promise<SendableDelivery[]> {
  const now = ctx.clock.now();
  const aliveSince = now - DEAD_AFTER_MS;
  const excluded = new Set(options.excludeTargets ?? []);
  const targets = ctx.deliveries.targets;
  return ctx.db.transact(async (trx) => {
    // Claiming proves this worker alive, so a lease it takes is never mistaken for a dead
    // one's; a dispatcher whose heartbeat is fresh skips this write.
    if (options.beat !== false) await recordHeartbeat(trx, options.owner, now);
    const withWork = (await TARGETS_WITH_WORK.execute(trx)).rows.map((r) => r.id);
    if (withWork.length === 0) return [];
    // Due rows per target, found first; which targets are paused is asked per kind after.
    const candidates: Array<{ id: string; kind: string; targetId: string }> = [];
    // Targets with due rows beyond their slots; told to onLeftForSlots at the end, less those
    // that turn out paused or throttled (their rows wait for the target, not for slots).
    const left = new Set<string>();
    const reportLeft = () => {
      for (const key of left) options.onLeftForSlots?.(key);
    };
    // Start at a different target each time so none is always served last.
    const start = Math.floor(Math.random() * withWork.length);
    for (let i = 0; i < withWork.length && candidates.length < options.limit; i++) {
      const targetId = withWork[(start + i) % withWork.length] as string;
      const rows = await dueOfTarget.execute(
        trx,
        targetId,
        now,
        now + (options.lookAheadMs ?? 0),
        aliveSince,
        options.owner,
        options.limit - candidates.length,
      );
      let taken = 0;
      for (const row of rows) {
        // Coming due within the look-ahead: not claimed, only its time told (rows are by due time).
        if (Number(row.next_attempt_at) > now) {
          options.onNextDue?.(Number(row.next_attempt_at));
          break;
        }
        const key = targetKey(row.kind, targetId);
        const slots = excluded.has(key) ? 0 : (options.slotsFor?.(key) ?? options.limit);
        if (taken >= slots) {
          left.add(key);
          break;
        }
        taken += 1;
        candidates.push({ id: row.id, kind: row.kind, targetId });
      }
    }
    if (candidates.length === 0) {
      reportLeft();
      return [];
    }
    const chosen: string[] = [];
    const slots = new Map<string, { at: number; gap: number }>();
    const throttled: Array<{ key: string; perSecond: number; group: typeof candidates }> = [];
    for (const [kind, ids] of groupBy(candidates, (c) => c.kind)) {
      const target = targets.get(kind);
      if (!target) {
        ctx.logger.error({ kind }, 'deliveries of an unregistered kind wait');
        for (const c of ids) left.delete(targetKey(kind, c.targetId));
        continue;
      }
      const targetIds = [...new Set(ids.map((c) => c.targetId))];
      const details = await target.details(trx, targetIds);
      options.onDetails?.(kind, details);
      await endDeliveriesOfRemoved(
        trx,
        target,
        kind,
        targetIds.filter((id) => !details.has(id)),
        now,
      );
      for (const [targetId, group] of groupBy(ids, (c) => c.targetId)) {
        const detail = details.get(targetId);
        const perSecond = detail === undefined ? null : (target.throttle?.(detail) ?? null);
        if (detail === undefined || perSecond !== null) left.delete(targetKey(kind, targetId));
        if (detail === undefined) continue;
        if (perSecond === null) for (const c of group) chosen.push(c.id);
        else throttled.push({ key: targetKey(kind, targetId), perSecond, group });
      }
    }
    // A throttled target: only as many as have a send slot soon, each told its slot. In key
    // order, so two workers never lock two targets' slot rows in opposite orders (PostgreSQL).
    throttled.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { key, perSecond, group } of throttled) {
      const reserved = await reserveSendSlots(trx, key, perSecond, group.length, now);
      for (const [i, at] of reserved.entries()) {
        const c = group[i] as (typeof group)[number];
        chosen.push(c.id);
        slots.set(c.id, { at, gap: slotInterval(perSecond) });
      }
    }
    reportLeft();
    if (chosen.length === 0) return [];
    // The lease condition again: on PostgreSQL another worker may have claimed a row since
    // it was read; its lease makes this UPDATE skip the row, so each row has one owner.
    const claimed = await trx
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status: 'attempting',
        lease_until: now + options.leaseMs,
        lease_owner: options.owner,
        unrecorded_sends: eb('unrecorded_sends', '+', 1),
      }))
      .where('id', 'in', chosen)
      .where((eb) =>
        eb.or([
          eb('lease_until', 'is', null),
          eb('lease_until', '<=', now),
          eb.and([
            eb('lease_owner', '<>', options.owner),
            eb(
              'lease_owner',
              'not in',
              eb.selectFrom('delivery_workers').select('id').where('heartbeat_at', '>', aliveSince),
            ),
          ]),
        ]),
      )
      .where('next_attempt_at', '<=', now)
      .returning('id')
      .execute();
    if (claimed.length === 0) return [];
    const loaded = await loadClaimed(
      trx,
      claimed.map((c) => c.id),
    );
    for (const delivery of loaded) {
      const slot = slots.get(delivery.id);
      if (slot === undefined) continue;
      delivery.notBefore = slot.at;
      delivery.slotGapMs = slot.gap;
    }
    return loaded;
  });
}

/**
 * Due deliveries of targets removed for good are ended, not left waiting as a paused target's
 * are: those a delete could not end because a worker held them, and that worker died before
 * recording its attempt. Asked only about targets `details` left out.
 */
async function endDeliveriesOfRemoved(
  trx: Trx,
  target: DeliveryTarget,
  kind: string,
  leftOut: string[],
  now: number,
): Promise<void> {
  if (leftOut.length === 0) return;
  for (const id of await removedTargets(trx, target, leftOut)) await finishDeliveriesOf(trx, kind, id, now);
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

async function loadClaimed(trx: Trx, ids: string[]): Promise<SendableDelivery[]> {
  const rows = await trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.kind',
      'd.brand_id',
      'd.subscription_id',
      'd.event_id',
      'd.event',
      'd.attempt_count',
      'd.attempt_base',
      'd.unrecorded_sends',
      'd.target_url',
      'd.method',
      'd.resume_status',
      'd.resume_at',
      'e.payload',
    ])
    .where('d.id', 'in', ids)
    .orderBy('d.next_attempt_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    targetId: r.subscription_id,
    brandId: r.brand_id,
    eventId: r.event_id,
    event: r.event,
    payload: r.payload,
    requestUrl: r.target_url,
    method: r.method,
    attemptCount: r.attempt_count,
    attemptBase: r.attempt_base,
    unrecordedSends: r.unrecorded_sends,
    ...(r.resume_status === 'retry_scheduled' || r.resume_status === 'succeeded' || r.resume_status === 'failed'
      ? { resume: { status: r.resume_status, nextAttemptAt: r.resume_at } }
      : {}),
  }));
}
