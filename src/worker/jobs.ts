import type { AppContext } from '../context.js';
import { sweepIdempotencyKeys } from '../http/idempotency.js';
import { FOLD_INTERVAL_MS, foldFacts } from '../modules/analytics/fold.js';
import { approveExpiredHolds } from '../modules/conversions/service.js';
import { Dispatcher } from '../modules/deliveries/dispatcher.js';
import { sweepAll } from '../modules/retention/sweep.js';
import { finishDeliveriesOfDeleted } from '../modules/webhooks/service.js';
import { FailureLog } from './failureLog.js';
import { type Job, sleep } from './worker.js';

/**
 * How often the hold job looks for expired holds. A hold is hours or days long, so a
 * second of lateness is invisible, and the query is an index range scan.
 */
export const HOLD_POLL_INTERVAL_MS = 1000;

/** Expired idempotency keys are deleted about once a minute (one indexed range delete). */
export const IDEMPOTENCY_SWEEP_INTERVAL_MS = 60_000;

/** Deliveries a delete left to a worker that then died are ended within about a minute. */
export const DELETED_SWEEP_INTERVAL_MS = 60_000;

/** Retention looks for expired rows once a minute: windows are days long, and an idle sweep is three index probes. */
export const RETENTION_INTERVAL_MS = 60_000;
/**
 * How a backlog (a first sweep over months of data) is paced: each batch is one short write
 * transaction, at least 100 ms apart, and the sweep takes at most a twentieth of the time
 * (modules/retention: SweepPace). A million old clicks then go in well under an hour.
 */
export const RETENTION_PACE = { pauseMs: 100, share: 0.05 };

/** Runs `step` every `intervalMs` until aborted; a failing step is retried with back-off (FailureLog). */
export function periodicJob(name: string, ctx: AppContext, intervalMs: number, step: () => Promise<unknown>): Job {
  return {
    name,
    async run(signal) {
      const failures = new FailureLog(ctx, name, intervalMs);
      while (!signal.aborted) {
        try {
          await step();
          failures.succeeded();
        } catch (error) {
          failures.failed(error);
        }
        await sleep(failures.delay(), signal);
      }
    },
  };
}

/** The jobs a worker process runs. */
export function createJobs(ctx: AppContext): Job[] {
  return [
    periodicJob('hold-approvals', ctx, HOLD_POLL_INTERVAL_MS, () => approveExpiredHolds(ctx)),
    periodicJob('idempotency-sweep', ctx, IDEMPOTENCY_SWEEP_INTERVAL_MS, () => sweepIdempotencyKeys(ctx)),
    periodicJob('analytics-fold', ctx, FOLD_INTERVAL_MS, () => foldFacts(ctx)),
    periodicJob('deleted-subscriptions', ctx, DELETED_SWEEP_INTERVAL_MS, () => finishDeliveriesOfDeleted(ctx)),
    retentionJob(ctx),
    new Dispatcher(ctx),
  ];
}

/** The retention sweep (modules/retention): a backlog in paused batches, stopping between two when aborted. */
function retentionJob(ctx: AppContext): Job {
  return {
    name: 'retention',
    async run(signal) {
      const failures = new FailureLog(ctx, 'retention', RETENTION_INTERVAL_MS);
      while (!signal.aborted) {
        try {
          const deleted = await sweepAll(ctx, RETENTION_PACE, signal);
          failures.succeeded();
          if (deleted.deliveries + deleted.events + deleted.clicks > 0) ctx.logger.info({ deleted }, 'retention sweep');
        } catch (error) {
          failures.failed(error);
        }
        await sleep(failures.delay(), signal);
      }
    },
  };
}
