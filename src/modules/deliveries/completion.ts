/**
 * Recording attempts: the attempt row and the delivery's next state, fenced by the lease
 * owner and the attempt count the attempt was claimed with, so a worker whose lease was taken
 * over cannot overwrite the newer state — not even after it has claimed the delivery again
 * (same owner, a later attempt: the late outcome would take that attempt's place). Outcomes
 * that finish while a write is under way are written together in one transaction (one
 * commit, one fsync, for many attempts); the dispatcher never waits on it to send more.
 */
import { CompiledQuery, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { prepared, preparedInsert } from '../../db/prepared.js';
import type { Trx } from '../../db/types.js';
import { timeOfId } from '../../ids.js';
import { failRetriesOfRemoved } from './removal.js';
import type { AttemptOutcome } from './sender.js';
import type { RecordedOutcome, SendableDelivery } from './target.js';

export type Verdict =
  | { status: 'succeeded' | 'failed'; nextAttemptAt: null }
  | { status: 'retry_scheduled'; nextAttemptAt: number };

const isSuccess = (outcome: AttemptOutcome) =>
  outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;

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
  if (isSuccess(outcome)) return { status: 'succeeded', nextAttemptAt: null };
  if (attemptInSequence >= maxAttempts) return { status: 'failed', nextAttemptAt: null };
  const delay = delays[Math.min(attemptInSequence - 1, delays.length - 1)] ?? 0;
  return { status: 'retry_scheduled', nextAttemptAt: now + delay };
}

/**
 * Text as both databases store it alike: PostgreSQL's text cannot hold NUL (it refuses the
 * whole row), and a lone UTF-16 surrogate would be replaced differently by each driver. A
 * receiver's answer may contain anything, so its bytes are made storable, never refused.
 */
export function storableText(text: string | null): string | null {
  return text === null ? null : text.replaceAll('\u0000', '\uFFFD').toWellFormed();
}

export const UNSTORABLE_ANSWER = "the receiver's answer could not be stored";

const finishAttempt = prepared(
  8,
  (
    q,
    status: Verdict['status'],
    number: number,
    attemptBase: number,
    nextAttemptAt: number | null,
    now: number,
    id: string,
    owner: string,
    claimedCount: number,
  ) =>
    q
      .updateTable('webhook_deliveries')
      .set({
        status,
        attempt_count: number,
        attempt_base: attemptBase,
        next_attempt_at: nextAttemptAt,
        resume_status: null,
        resume_at: null,
        lease_until: null,
        lease_owner: null,
        unrecorded_sends: 0,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('attempt_count', '=', claimedCount)
      .returning('id'),
);

/** An attempt row as written: what was sent and what came back (migration 0021). */
export interface AttemptInsert {
  delivery_id: string;
  number: number;
  attempted_at: number;
  status_code: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  request_url: string | null;
  request_method: string | null;
  request_headers: string | null;
  response_headers: string | null;
}

const ATTEMPT_COLUMNS = [
  'delivery_id',
  'number',
  'attempted_at',
  'status_code',
  'latency_ms',
  'response_body',
  'error',
  'request_url',
  'request_method',
  'request_headers',
  'response_headers',
] as const satisfies ReadonlyArray<keyof AttemptInsert>;

export const attemptInsert = preparedInsert<AttemptInsert>('webhook_attempts', ATTEMPT_COLUMNS);

/** The log's columns of an outcome: the request as sent and the response headers, as JSON. */
export function exchangeColumns(
  outcome: AttemptOutcome,
): Pick<AttemptInsert, 'request_url' | 'request_method' | 'request_headers' | 'response_headers'> {
  return {
    request_url: outcome.request?.url ?? null,
    request_method: outcome.request?.method ?? null,
    request_headers: outcome.request ? JSON.stringify(outcome.request.headers) : null,
    response_headers: outcome.responseHeaders ? storableText(JSON.stringify(outcome.responseHeaders)) : null,
  };
}

interface Completion {
  delivery: SendableDelivery;
  owner: string;
  verdict: Verdict;
  /** Attempts before the current sequence after this one (a manual one-off attempt is outside it). */
  attemptBase: number;
  now: number;
  attempt: AttemptInsert;
  /** What the target kind hears of it (DeliveryTarget.recorded). */
  outcome: RecordedOutcome;
}

function completion(
  ctx: AppContext,
  delivery: SendableDelivery,
  owner: string,
  attemptedAt: number,
  outcome: AttemptOutcome,
  forced?: Verdict,
): Completion {
  const number = delivery.attemptCount + 1;
  const now = ctx.clock.now();
  const { resume } = delivery;
  // A manual redelivery's one attempt: success finishes the delivery; a failure returns it to
  // where it was (a waiting retry still comes due as scheduled) and does not use up one of
  // the sequence's attempts.
  const oneOff: Verdict | undefined = resume
    ? isSuccess(outcome)
      ? { status: 'succeeded', nextAttemptAt: null }
      : resume.status === 'retry_scheduled'
        ? { status: 'retry_scheduled', nextAttemptAt: resume.nextAttemptAt ?? now }
        : { status: resume.status, nextAttemptAt: null }
    : undefined;
  const verdict =
    forced ??
    oneOff ??
    decideNext(
      outcome,
      number - delivery.attemptBase,
      now,
      ctx.config.webhookRetryDelaysMs,
      ctx.config.webhookMaxAttempts,
    );
  return {
    delivery,
    owner,
    verdict,
    attemptBase: resume ? delivery.attemptBase + 1 : delivery.attemptBase,
    now,
    outcome: {
      targetId: delivery.targetId,
      deliveryId: delivery.id,
      attemptedAt,
      succeeded: isSuccess(outcome),
      deliveryFailed: verdict.status === 'failed' && resume?.status !== 'failed',
    },
    attempt: {
      delivery_id: delivery.id,
      number,
      attempted_at: attemptedAt,
      status_code: outcome.statusCode,
      latency_ms: outcome.latencyMs,
      response_body: storableText(outcome.responseBody),
      error: storableText(outcome.error),
      ...exchangeColumns(outcome),
    },
  };
}

/** Writes one completion in `trx`; false when the lease was lost meanwhile. */
async function write(trx: Trx, c: Completion): Promise<boolean> {
  const [updated] = await finishAttempt.execute(
    trx,
    c.verdict.status,
    c.attempt.number,
    c.attemptBase,
    c.verdict.nextAttemptAt,
    c.now,
    c.delivery.id,
    c.owner,
    c.delivery.attemptCount,
  );
  if (!updated) return false;
  await attemptInsert.execute(trx, c.attempt);
  return true;
}

/**
 * PostgreSQL: a batch's completions in one statement (a round trip costs more than the rows):
 * each delivery's new state, fenced by its lease owner and claimed attempt count as
 * `finishAttempt` is (the new count is always the claimed one plus one), and the attempt rows
 * of the deliveries it updated. $1: the deliveries' new states as rows, the lease owner in
 * `lease_owner`; $2: the attempts.
 */
const FINISH_ALL = sql<{ id: string }>`
  with done as (
    select * from json_populate_recordset(null::webhook_deliveries, ${''}::json)
  ),
  updated as (
    update webhook_deliveries d
    set status = done.status, attempt_count = done.attempt_count, attempt_base = done.attempt_base,
        next_attempt_at = done.next_attempt_at, resume_status = null, resume_at = null, lease_until = null,
        lease_owner = null, unrecorded_sends = 0, updated_at = done.updated_at
    from done
    where d.id = done.id and d.lease_owner = done.lease_owner and d.attempt_count = done.attempt_count - 1
    returning d.id
  ),
  attempts as (
    insert into webhook_attempts (${sql.join(ATTEMPT_COLUMNS.map((c) => sql.ref(c)))})
    select ${sql.join(ATTEMPT_COLUMNS.map((c) => sql.ref(`a.${c}`)))}
    from json_populate_recordset(null::webhook_attempts, ${''}::json) a
    join updated on updated.id = a.delivery_id
  )
  select id from updated`;
/** FINISH_ALL's text, compiled at its first use (it never changes). */
let finishAllText: string | undefined;

async function writeAllAtOnce(trx: Trx, completions: Completion[]): Promise<boolean[]> {
  const states = completions.map((c) => ({
    id: c.delivery.id,
    lease_owner: c.owner,
    status: c.verdict.status,
    attempt_count: c.attempt.number,
    attempt_base: c.attemptBase,
    next_attempt_at: c.verdict.nextAttemptAt,
    updated_at: c.now,
  }));
  const attempts = completions.map((c) => c.attempt);
  finishAllText ??= FINISH_ALL.compile(trx).sql;
  const { rows } = await trx.executeQuery<{ id: string }>(
    CompiledQuery.raw(finishAllText, [JSON.stringify(states), JSON.stringify(attempts)]),
  );
  const updated = new Set(rows.map((row) => row.id));
  return completions.map((c) => updated.has(c.delivery.id));
}

/**
 * Writes completions in `trx`, then tells each target kind of its recorded attempts (its
 * health counters, say) in the same transaction: one call per kind and batch.
 */
async function writeAll(ctx: AppContext, trx: Trx, completions: Completion[]): Promise<boolean[]> {
  const results: boolean[] = [];
  if (ctx.db.dialect === 'postgres' && completions.length > 1) {
    results.push(...(await writeAllAtOnce(trx, completions)));
  } else {
    for (const c of completions) results.push(await write(trx, c));
  }
  const byKind = new Map<string, RecordedOutcome[]>();
  for (const [i, c] of completions.entries()) {
    if (!results[i]) continue;
    const outcomes = byKind.get(c.delivery.kind);
    if (outcomes) outcomes.push(c.outcome);
    else byKind.set(c.delivery.kind, [c.outcome]);
  }
  for (const [kind, outcomes] of byKind) {
    const target = ctx.deliveries.targets.get(kind);
    if (!target) continue;
    // The kind first: a webhook's health update waits for a delete of its subscription under
    // way (which locks that row first), so the removal check below sees it.
    await target.recorded?.(ctx, trx, outcomes);
    await failRetriesOfRemoved(trx, target, outcomes, ctx.clock.now());
  }
  return results;
}

/**
 * Writes one completion on its own. If the attempt cannot be stored as it is, it is stored
 * without the receiver's answer (the reason in `error`), so the schedule always moves on: an
 * unstorable answer must never turn into resending the delivery at every lease expiry.
 */
async function writeAlone(ctx: AppContext, c: Completion): Promise<boolean> {
  const recorded = await writeAloneOnce(ctx, c);
  if (recorded) observe(ctx, c);
  return recorded;
}

/**
 * Metrics of a recorded attempt: its outcome and, for a delivery's first attempt, the wait
 * since the delivery was created (its id carries that time). Nothing when metrics are off.
 */
function observe(ctx: AppContext, c: Completion): void {
  const metrics = ctx.metrics;
  if (!metrics) return;
  metrics.deliveryAttempts.inc({ kind: c.delivery.kind, outcome: c.verdict.status });
  if (c.attempt.number === 1) {
    const delay = (c.attempt.attempted_at - (timeOfId(c.delivery.id) ?? c.attempt.attempted_at)) / 1000;
    metrics.firstAttemptDelay.observe({ kind: c.delivery.kind }, Math.max(0, delay));
  }
}

async function writeAloneOnce(ctx: AppContext, c: Completion): Promise<boolean> {
  try {
    return (await ctx.db.transact((trx) => writeAll(ctx, trx, [c])))[0] ?? false;
  } catch (error) {
    ctx.logger.error(
      { err: error, deliveryId: c.delivery.id },
      'could not store an attempt; storing it without the answer',
    );
    const bare = {
      ...c,
      attempt: { ...c.attempt, response_body: null, response_headers: null, error: UNSTORABLE_ANSWER },
    };
    return (await ctx.db.transact((trx) => writeAll(ctx, trx, [bare])))[0] ?? false;
  }
}

/** Records one attempt and the delivery's new state; false when the lease was lost meanwhile. */
export async function completeAttempt(
  ctx: AppContext,
  delivery: SendableDelivery,
  owner: string,
  attemptedAt: number,
  outcome: AttemptOutcome,
  forced?: Verdict,
): Promise<{ recorded: boolean; verdict: Verdict }> {
  const c = completion(ctx, delivery, owner, attemptedAt, outcome, forced);
  return { recorded: await writeAlone(ctx, c), verdict: c.verdict };
}

/**
 * Batches completions: those that arrive while a batch is being written go into the next
 * one. A batch is one transaction; if it fails, each of its completions is written alone
 * (so one bad row cannot keep the others from being recorded).
 */
export class CompletionBatcher {
  private queue: Array<{ c: Completion; resolve: (recorded: boolean) => void; reject: (e: unknown) => void }> = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly ctx: AppContext) {}

  complete(
    delivery: SendableDelivery,
    owner: string,
    attemptedAt: number,
    outcome: AttemptOutcome,
    forced?: Verdict,
  ): Promise<{ recorded: boolean; verdict: Verdict }> {
    const c = completion(this.ctx, delivery, owner, attemptedAt, outcome, forced);
    return new Promise((resolve, reject) => {
      this.queue.push({ c, resolve: (recorded) => resolve({ recorded, verdict: c.verdict }), reject });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flushLoop(): Promise<void> {
    // Yield once so completions of the same turn join the first batch.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_COMPLETIONS_PER_BATCH);
        try {
          const recorded = await this.ctx.db.transact((trx) =>
            writeAll(
              this.ctx,
              trx,
              batch.map(({ c }) => c),
            ),
          );
          for (const [i, item] of batch.entries()) {
            const ok = recorded[i] ?? false;
            if (ok) observe(this.ctx, item.c);
            item.resolve(ok);
          }
        } catch {
          for (const item of batch) {
            try {
              item.resolve(await writeAlone(this.ctx, item.c));
            } catch (error) {
              item.reject(error);
            }
          }
        }
      }
    } finally {
      this.flushing = null;
    }
  }
}

/** Completions per transaction at most, so one batch does not hold the writer for long. */
const MAX_COMPLETIONS_PER_BATCH = 256;
