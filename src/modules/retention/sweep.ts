/**
 * Retention (issue #20, point 9): the worker deletes deliveries (with their attempts),
 * events and raw clicks older than their windows (RETENTION_DELIVERIES, RETENTION_EVENTS,
 * RETENTION_CLICKS), in small batches so the hot paths never wait long for the writer.
 *
 * Every batch is one short transaction that walks a primary key: ids sort by creation time
 * (ids.ts), so "older than the window" is `id < idAt(prefix, cutoff)`, an index range from
 * the oldest row, and a batch reads and deletes at most RETENTION_BATCH_SIZE rows. Nothing
 * scans a table. On PostgreSQL the batch's rows are locked with SKIP LOCKED, so two workers
 * sweeping at once share the work instead of waiting on each other.
 *
 * Reports never read these rows: they read the analytics facts and rollups (modules/
 * analytics), which are not touched here, so deleting a click changes no report total.
 */

import { performance } from 'node:perf_hooks';
import { PostgresAdapter, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { DeliveryStatus } from '../../db/schema.js';
import type { Trx } from '../../db/types.js';
import { idAt } from '../../ids.js';

export interface SweepResult {
  deliveries: number;
  events: number;
  clicks: number;
}

const isPostgres = (trx: Trx) => trx.getExecutor().adapter instanceof PostgresAdapter;

/** The delivery statuses nothing will change any more: the only ones retention deletes. */
const FINISHED: DeliveryStatus[] = ['succeeded', 'failed'];

/**
 * One batch of finished deliveries (`succeeded` or `failed`) created before `cutoff`, with
 * their attempts. Unfinished ones are left to finish first: a retry still due, an attempt on
 * the wire, and a `parked` one (a disabled subscription's, never sent: enabling it sends it,
 * however long it waited), whose `next_attempt_at` is NULL like a finished one's.
 */
export async function deleteOldDeliveries(trx: Trx, cutoff: number, limit: number): Promise<number> {
  let select = trx
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', '<', idAt('wh', cutoff))
    // "Finished" written so that no index can answer it: as `next_attempt_at is null`, SQLite
    // (no statistics) read every finished delivery through the due index and sorted them —
    // 45 ms a batch at 200k — instead of walking the primary key from the oldest.
    .where((eb) => eb(eb.fn.coalesce('next_attempt_at', sql.lit(-1)), '=', -1))
    // The status list, not `<> 'parked'`, so a status added later is kept until it is named
    // here. No index leads with status, so this too leaves the primary-key walk alone.
    .where('status', 'in', FINISHED)
    .orderBy('id')
    .limit(limit);
  if (isPostgres(trx)) select = select.forUpdate().skipLocked();
  const ids = (await select.execute()).map((r) => r.id);
  if (ids.length === 0) return 0;
  await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
  await trx.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
  return ids.length;
}

/** One batch of events created before `cutoff` that no delivery refers to any more. */
export async function deleteOldEvents(trx: Trx, cutoff: number, limit: number): Promise<number> {
  let select = trx
    .selectFrom('events as e')
    .select('e.id')
    .where('e.id', '<', idAt('evt', cutoff))
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'e.id'))),
    )
    .orderBy('e.id')
    .limit(limit);
  if (isPostgres(trx)) select = select.forUpdate().skipLocked();
  const ids = (await select.execute()).map((r) => r.id);
  if (ids.length === 0) return 0;
  await trx.deleteFrom('events').where('id', 'in', ids).execute();
  return ids.length;
}

/** One batch of raw clicks made before `cutoff`. */
export async function deleteOldClicks(trx: Trx, cutoff: number, limit: number): Promise<number> {
  let select = trx.selectFrom('clicks').select('id').where('id', '<', idAt('clk', cutoff)).orderBy('id').limit(limit);
  if (isPostgres(trx)) select = select.forUpdate().skipLocked();
  const ids = (await select.execute()).map((r) => r.id);
  if (ids.length === 0) return 0;
  await trx.deleteFrom('clicks').where('id', 'in', ids).execute();
  return ids.length;
}

/**
 * One batch of each kind, each its own transaction (so none holds the writer for more than
 * one batch). An event is kept while a delivery refers to it, so events go after their
 * deliveries: its window is at least the deliveries' one.
 */
export async function sweepOnce(ctx: AppContext): Promise<SweepResult> {
  const { retentionDeliveriesMs, retentionEventsMs, retentionClicksMs, retentionBatchSize: limit } = ctx.config;
  const now = ctx.clock.now();
  const result: SweepResult = { deliveries: 0, events: 0, clicks: 0 };
  if (retentionDeliveriesMs !== null) {
    const cutoff = now - retentionDeliveriesMs;
    result.deliveries = await ctx.db.transact((trx) => deleteOldDeliveries(trx, cutoff, limit));
  }
  if (retentionEventsMs !== null) {
    const window = Math.max(retentionEventsMs, retentionDeliveriesMs ?? 0);
    result.events = await ctx.db.transact((trx) => deleteOldEvents(trx, now - window, limit));
  }
  if (retentionClicksMs !== null) {
    const cutoff = now - retentionClicksMs;
    result.clicks = await ctx.db.transact((trx) => deleteOldClicks(trx, cutoff, limit));
  }
  return result;
}

/**
 * How a backlog is paced: at least `pauseMs` between two rounds, and at most `share` of the
 * time spent in rounds. A round's statements run on the event loop that also serves the
 * tracking link and the API (better-sqlite3 is synchronous), so a first sweep over months of
 * data must not take more of it than the traffic can spare, however slow the disk is.
 */
export interface SweepPace {
  pauseMs: number;
  share: number;
}

/** The pause after a round that took `tookMs`: the minimum, or enough to keep the sweep to its share. */
export function pauseAfter(tookMs: number, pace: SweepPace): number {
  return Math.max(pace.pauseMs, (tookMs * (1 - pace.share)) / pace.share);
}

/** Sweeps until every batch comes back short of full (or `signal` aborts); returns the totals. */
export async function sweepAll(
  ctx: AppContext,
  pace: SweepPace = { pauseMs: 0, share: 1 },
  signal?: AbortSignal,
): Promise<SweepResult> {
  const total: SweepResult = { deliveries: 0, events: 0, clicks: 0 };
  for (;;) {
    const started = performance.now();
    const batch = await sweepOnce(ctx);
    const took = performance.now() - started;
    total.deliveries += batch.deliveries;
    total.events += batch.events;
    total.clicks += batch.clicks;
    const limit = ctx.config.retentionBatchSize;
    const more = batch.deliveries === limit || batch.events === limit || batch.clicks === limit;
    if (!more || signal?.aborted) return total;
    const pause = pauseAfter(took, pace);
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
