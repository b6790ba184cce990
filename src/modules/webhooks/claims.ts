/**
 * Claiming and completing deliveries. A claim marks due deliveries with a lease (owner +
 * expiry); the UPDATE re-checks the lease, so when two workers pick the same row only one
 * gets it (PostgreSQL re-evaluates the condition after the row lock; SQLite has a single
 * writer). A crashed worker's lease simply expires and the delivery becomes due again. Completion is fenced by
 * the lease owner, so a worker whose lease was taken over cannot overwrite the newer state.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { prepared, preparedInsert } from '../../db/prepared.js';
import type { AttemptRow } from './repository.js';
import type { AttemptOutcome } from './sender.js';

export interface ClaimedDelivery {
  id: string;
  brandId: string;
  subscriptionId: string;
  eventId: string;
  event: string;
  attemptCount: number;
  attemptBase: number;
  kind: 'webhook' | 'postback';
  method: 'GET' | 'POST';
  payload: string;
  url: string;
  secret: string | null;
  /** Sends since the last recorded attempt, this one included. */
  unrecordedSends: number;
}

export interface ClaimOptions {
  owner: string;
  /** Deliveries to claim at most (free global slots). */
  limit: number;
  leaseMs: number;
  /** Subscriptions not to claim for (their slots are full). */
  excludeSubscriptions: string[];
  /** Deliveries to claim at most for one subscription (its free slots); default `limit`. */
  slotsFor?: (subscriptionId: string) => number;
}

/** Subscriptions (or postback templates) with unfinished deliveries: a loose index scan, one probe per subscription. */
const SUBSCRIPTIONS_WITH_WORK = sql<{ id: string }>`
  with recursive subs(id) as (
    select min(subscription_id) from webhook_deliveries where next_attempt_at is not null
    union all
    select (select min(subscription_id) from webhook_deliveries
            where next_attempt_at is not null and subscription_id > subs.id)
    from subs where subs.id is not null
  )
  select id from subs where id is not null`;

const dueOfSubscription = prepared(3, (q, subscriptionId: string, now: number, limit: number) => {
  const due = q
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
    .orderBy('next_attempt_at')
    .limit(limit);
  // PostgreSQL: rows another worker is claiming right now are skipped, so concurrent
  // workers share a subscription's backlog instead of queueing on the same rows.
  return q.getExecutor().adapter instanceof PostgresAdapter ? due.forUpdate().skipLocked() : due;
});

/**
 * Claims due deliveries subscription by subscription, each up to its free slots, so a
 * receiver with a large backlog (dead, slow or disabled) costs one index probe, never a
 * scan of its backlog. Webhooks of disabled subscriptions wait; postbacks have none.
 */
export async function claimDueDeliveries(ctx: AppContext, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  const now = ctx.clock.now();
  const excluded = new Set(options.excludeSubscriptions);
  return ctx.db.transact(async (trx) => {
    const withWork = (await SUBSCRIPTIONS_WITH_WORK.execute(trx)).rows
      .map((r) => r.id)
      .filter((id) => !excluded.has(id));
    if (withWork.length === 0) return [];
    const webhookIds = withWork.filter((id) => !id.startsWith('pbk_'));
    const active = new Set(
      webhookIds.length === 0
        ? []
        : (
            await trx
              .selectFrom('webhook_subscriptions')
              .select('id')
              .where('id', 'in', webhookIds)
              .where('status', '=', 'active')
              .execute()
          ).map((r) => r.id),
    );
    const chosen: string[] = [];
    // Start at a different subscription each time so none is always served last.
    const start = Math.floor(Math.random() * withWork.length);
    for (let i = 0; i < withWork.length && chosen.length < options.limit; i++) {
      const subscriptionId = withWork[(start + i) % withWork.length] as string;
      if (!subscriptionId.startsWith('pbk_') && !active.has(subscriptionId)) continue;
      const slots = Math.min(options.slotsFor?.(subscriptionId) ?? options.limit, options.limit - chosen.length);
      if (slots <= 0) continue;
      for (const row of await dueOfSubscription.execute(trx, subscriptionId, now, slots)) chosen.push(row.id);
    }
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
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
      .where('next_attempt_at', '<=', now)
      .returning('id')
      .execute();
    if (claimed.length === 0) return [];
    return loadClaimed(
      trx,
      claimed.map((c) => c.id),
    );
  });
}

async function loadClaimed(trx: Trx, ids: string[]): Promise<ClaimedDelivery[]> {
  const rows = await trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .leftJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .select([
      'd.id',
      'd.brand_id',
      'd.subscription_id',
      'd.event_id',
      'd.event',
      'd.attempt_count',
      'd.attempt_base',
      'd.kind',
      'd.target_url',
      'd.method',
      'd.unrecorded_sends',
      'e.payload',
      's.url',
      's.secret',
    ])
    .where('d.id', 'in', ids)
    .orderBy('d.next_attempt_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    brandId: r.brand_id,
    subscriptionId: r.subscription_id,
    eventId: r.event_id,
    event: r.event,
    attemptCount: r.attempt_count,
    attemptBase: r.attempt_base,
    kind: r.kind,
    method: r.method ?? 'POST',
    payload: r.payload,
    url: r.target_url ?? r.url ?? '',
    secret: r.secret ?? null,
    unrecordedSends: r.unrecorded_sends,
  }));
}

export type Verdict =
  | { status: 'succeeded' | 'failed'; nextAttemptAt: null }
  | { status: 'retry_scheduled'; nextAttemptAt: number };

/**
 * DESIGN §5: 2xx succeeds; otherwise, after failed attempt n of the current sequence, the
 * next waits delays[n-1] (the last delay repeats if attempts outnumber delays), and a
 * failed attempt n = maxAttempts marks the delivery failed.
 */
export function decideNext(
  outcome: AttemptOutcome,
  attemptInSequence: number,
  now: number,
  delays: number[],
  maxAttempts: number,
): Verdict {
  if (outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300) {
    return { status: 'succeeded', nextAttemptAt: null };
  }
  if (attemptInSequence >= maxAttempts) return { status: 'failed', nextAttemptAt: null };
  const delay = delays[Math.min(attemptInSequence - 1, delays.length - 1)] ?? 0;
  return { status: 'retry_scheduled', nextAttemptAt: now + delay };
}

const finishAttempt = prepared(
  6,
  (
    q,
    status: Verdict['status'],
    number: number,
    nextAttemptAt: number | null,
    now: number,
    id: string,
    owner: string,
  ) =>
    q
      .updateTable('webhook_deliveries')
      .set({
        status,
        attempt_count: number,
        next_attempt_at: nextAttemptAt,
        lease_until: null,
        lease_owner: null,
        unrecorded_sends: 0,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .returning('id'),
);

const attemptInsert = preparedInsert<AttemptRow>('webhook_attempts', [
  'delivery_id',
  'number',
  'attempted_at',
  'status_code',
  'latency_ms',
  'response_body',
  'error',
]);

/**
 * Text as both databases store it alike: PostgreSQL's text cannot hold NUL (it refuses the
 * whole row), and a lone UTF-16 surrogate would be replaced differently by each driver. A
 * receiver's answer may contain anything, so its bytes are made storable, never refused.
 */
export function storableText(text: string | null): string | null {
  return text === null ? null : text.replaceAll('\u0000', '\uFFFD').toWellFormed();
}

/**
 * Records the attempt and the delivery's new state; false when the lease was lost meanwhile.
 * If the attempt cannot be stored as it is, it is stored without the receiver's answer (with
 * the reason in `error`), so the schedule always moves on: an unrecordable answer must never
 * turn into resending the delivery at every lease expiry.
 */
export async function completeAttempt(
  ctx: AppContext,
  delivery: ClaimedDelivery,
  owner: string,
  attemptedAt: number,
  outcome: AttemptOutcome,
  forced?: Verdict,
): Promise<{ recorded: boolean; verdict: Verdict }> {
  const number = delivery.attemptCount + 1;
  const now = ctx.clock.now();
  const verdict =
    forced ??
    decideNext(
      outcome,
      number - delivery.attemptBase,
      now,
      ctx.config.webhookRetryDelaysMs,
      ctx.config.webhookMaxAttempts,
    );
  const write = (row: AttemptRow) =>
    ctx.db.transact(async (trx) => {
      const [updated] = await finishAttempt.execute(
        trx,
        verdict.status,
        number,
        verdict.nextAttemptAt,
        now,
        delivery.id,
        owner,
      );
      if (!updated) return false;
      await attemptInsert.execute(trx, row);
      return true;
    });
  const row: AttemptRow = {
    delivery_id: delivery.id,
    number,
    attempted_at: attemptedAt,
    status_code: outcome.statusCode,
    latency_ms: outcome.latencyMs,
    response_body: storableText(outcome.responseBody),
    error: storableText(outcome.error),
  };
  let recorded: boolean;
  try {
    recorded = await write(row);
  } catch (error) {
    ctx.logger.error(
      { err: error, deliveryId: delivery.id },
      'could not store an attempt; storing it without the answer',
    );
    recorded = await write({ ...row, response_body: null, error: UNSTORABLE_ANSWER });
  }
  return { recorded, verdict };
}

export const UNSTORABLE_ANSWER = "the receiver's answer could not be stored";
