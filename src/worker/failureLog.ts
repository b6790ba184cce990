import type { AppContext } from '../context.js';

/**
 * The longest a failing job waits between two tries. A database outage made every job log an
 * error with its stack on each try (hold-approvals once a second), tens of thousands of lines
 * an hour; tries now back off, doubling, up to this (or the job's own interval if longer).
 */
export const MAX_FAILURE_BACKOFF_MS = 30_000;

/**
 * One error (with its stack) when a job starts failing, nothing more while it keeps failing,
 * and one line when it works again — as the rate limiter tells a store outage (http/rateLimit.ts).
 * `delay` is the wait before the next try: the interval, or the back-off while failing.
 */
export class FailureLog {
  private failures = 0;
  private since = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly job: string,
    private readonly intervalMs: number,
  ) {}

  succeeded(): void {
    if (this.failures === 0) return;
    this.ctx.logger.info(
      { job: this.job, failures: this.failures, failingMs: this.ctx.clock.now() - this.since },
      'job works again',
    );
    this.failures = 0;
  }

  failed(error: unknown): void {
    if (this.failures === 0) {
      this.since = this.ctx.clock.now();
      this.ctx.logger.error(
        { err: error, job: this.job },
        'job step failed; retrying with back-off, logged again when it works',
      );
    }
    this.failures += 1;
  }

  delay(): number {
    if (this.failures === 0) return this.intervalMs;
    const cap = Math.max(this.intervalMs, MAX_FAILURE_BACKOFF_MS);
    return Math.min(cap, this.intervalMs * 2 ** Math.min(this.failures, 30));
  }
}
