/**
 * The background worker: a set of jobs, each a loop that runs until the worker's
 * AbortSignal fires. Stopping aborts the signal and waits for every loop to finish its
 * current step, so no job is cut off half-way.
 */
import type { FastifyBaseLogger } from 'fastify';

export interface Job {
  name: string;
  /** Runs until `signal` aborts; must return promptly once it does. */
  run(signal: AbortSignal): Promise<void>;
}

export class Worker {
  private readonly controller = new AbortController();
  private running: Promise<void>[] = [];

  constructor(
    private readonly jobs: Job[],
    private readonly logger: FastifyBaseLogger,
  ) {}

  start(): void {
    this.running = this.jobs.map(async (job) => {
      try {
        await job.run(this.controller.signal);
      } catch (error) {
        this.logger.error({ err: error, job: job.name }, 'job stopped with an error');
      }
    });
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await Promise.all(this.running);
  }
}

/** Sleeps `ms`, or less when `signal` aborts or `wake` is called first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
