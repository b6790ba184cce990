import type { AppContext } from '../context.js';
import { FOLD_INTERVAL_MS, foldFacts } from '../modules/analytics/fold.js';
import { approveExpiredHolds } from '../modules/conversions/service.js';
import { Dispatcher } from '../modules/deliveries/dispatcher.js';
import { type Job, sleep } from './worker.js';

/**
 * How often the hold job looks for expired holds. A hold is hours or days long, so a
 * second of lateness is invisible, and the query is an index range scan.
 */
export const HOLD_POLL_INTERVAL_MS = 1000;

/** Runs `step` every `intervalMs` until aborted; a failing step is logged and retried next time. */
export function periodicJob(name: string, ctx: AppContext, intervalMs: number, step: () => Promise<unknown>): Job {
  return {
    name,
    async run(signal) {
      while (!signal.aborted) {
        try {
          await step();
        } catch (error) {
          ctx.logger.error({ err: error, job: name }, 'job step failed');
        }
        await sleep(intervalMs, signal);
      }
    },
  };
}

/** The jobs a worker process runs. */
export function createJobs(ctx: AppContext): Job[] {
  return [
    periodicJob('hold-approvals', ctx, HOLD_POLL_INTERVAL_MS, () => approveExpiredHolds(ctx)),
    periodicJob('analytics-fold', ctx, FOLD_INTERVAL_MS, () => foldFacts(ctx)),
    new Dispatcher(ctx),
  ];
}
