/**
 * Claiming and completing deliveries. A claim marks due deliveries with a lease (owner +
 * expiry) in one statement — `FOR UPDATE SKIP LOCKED` on PostgreSQL so concurrent workers
 * take disjoint rows; on SQLite the single writer makes the UPDATE atomic. A crashed
 * worker's lease simply expires and the delivery becomes due again. Completion is fenced by
 * the lease owner, so a worker whose lease was taken over cannot overwrite the newer state.
 */
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
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
}

export async function claimDueDeliveries(
  ctx: AppContext,
  options: { owner: string; limit: number; leaseMs: number; excludeSubscriptions: string[] },
): Promise<ClaimedDelivery[]> {
  const now = ctx.clock.now();
  return ctx.db.transact(async (trx) => {
    let candidates = trx
      .selectFrom('webhook_deliveries as d')
      .leftJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
      .select('d.id')
      .where('d.next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('d.lease_until', 'is', null), eb('d.lease_until', '<=', now)]))
      // Webhooks wait while their subscription is disabled; postbacks have no subscription.
      .where((eb) => eb.or([eb('d.kind', '=', 'postback'), eb('s.status', '=', 'active')]))
      .orderBy('d.next_attempt_at')
      .limit(options.limit);
    if (options.excludeSubscriptions.length > 0) {
      candidates = candidates.where('d.subscription_id', 'not in', options.excludeSubscriptions);
    }
    if (ctx.db.dialect === 'postgres') candidates = candidates.forUpdate(['d']).skipLocked();
    const claimed = await trx
      .updateTable('webhook_deliveries')
      .set({ status: 'attempting', lease_until: now + options.leaseMs, lease_owner: options.owner })
      .where('id', 'in', candidates)
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
  }));
}

/** Gives back claimed deliveries that this worker will not attempt now. */
export async function releaseClaims(ctx: AppContext, owner: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await ctx.db.transact((trx) =>
    trx
      .updateTable('webhook_deliveries')
      .set({ lease_until: null, lease_owner: null })
      .where('id', 'in', ids)
      .where('lease_owner', '=', owner)
      .execute(),
  );
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

/** Records the attempt and the delivery's new state; false when the lease was lost meanwhile. */
export async function completeAttempt(
  ctx: AppContext,
  delivery: ClaimedDelivery,
  owner: string,
  attemptedAt: number,
  outcome: AttemptOutcome,
): Promise<{ recorded: boolean; verdict: Verdict }> {
  const number = delivery.attemptCount + 1;
  const now = ctx.clock.now();
  const verdict = decideNext(
    outcome,
    number - delivery.attemptBase,
    now,
    ctx.config.webhookRetryDelaysMs,
    ctx.config.webhookMaxAttempts,
  );
  const recorded = await ctx.db.transact(async (trx) => {
    const result = await trx
      .updateTable('webhook_deliveries')
      .set({
        status: verdict.status,
        attempt_count: number,
        next_attempt_at: verdict.nextAttemptAt,
        lease_until: null,
        lease_owner: null,
        updated_at: now,
      })
      .where('id', '=', delivery.id)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await trx
      .insertInto('webhook_attempts')
      .values({
        delivery_id: delivery.id,
        number,
        attempted_at: attemptedAt,
        status_code: outcome.statusCode,
        latency_ms: outcome.latencyMs,
        response_body: outcome.responseBody,
        error: outcome.error,
      })
      .execute();
    return true;
  });
  return { recorded, verdict };
}
