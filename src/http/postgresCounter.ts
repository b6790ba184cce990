/**
 * Rate-limit windows in PostgreSQL, for deployments on PostgreSQL without Redis: every
 * process of the brand counts in one row per key (DESIGN.md: shared counters live in Redis
 * or PostgreSQL when several processes serve one brand). This is on the path of every keyed
 * request, so a hit is one statement (one round trip, compiled once) on an UNLOGGED table.
 */
import { sql } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { decide, type RateDecision, type SharedCounter, WINDOW_MS } from './rateLimit.js';

/**
 * Opens the key's window or counts in it, atomically: concurrent hits on one key queue on
 * its row, so the count is exact across processes. A window that has ended is reopened.
 */
const hitWindow = prepared(3, (q, key: string, now: number, resetAt: number) =>
  q
    .insertInto('rate_limit_windows')
    .values({ key, count: 1, reset_at: resetAt })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        count: sql<number>`case when rate_limit_windows.reset_at <= ${now} then 1 else rate_limit_windows.count + 1 end`,
        reset_at: sql<number>`case when rate_limit_windows.reset_at <= ${now} then excluded.reset_at else rate_limit_windows.reset_at end`,
      }),
    )
    .returning(['count', 'reset_at']),
);

const deleteEndedWindows = prepared(1, (q, now: number) =>
  q.deleteFrom('rate_limit_windows').where('reset_at', '<=', now),
);

export class PostgresCounter implements SharedCounter {
  readonly name = 'PostgreSQL';
  /** The pool reconnects by itself; a failed hit is the only sign of an outage. */
  readonly connected = true;
  private nextSweepAt = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async hit(key: string, limit: number): Promise<RateDecision> {
    const now = this.clock.now();
    const row = await hitWindow.first(this.db.standaloneWriter, key, now, now + WINDOW_MS);
    if (!row) throw new Error('rate-limit upsert returned no row');
    if (now >= this.nextSweepAt) this.sweep(now);
    return decide(row.count, limit, row.reset_at - now);
  }

  /**
   * Keys of one-off clients (an IP that applied once) would otherwise stay for ever: about
   * once a window, each process deletes the windows that have ended, without making the
   * request that triggers it wait.
   */
  private sweep(now: number): void {
    this.nextSweepAt = now + WINDOW_MS;
    deleteEndedWindows.execute(this.db.standaloneWriter, now).catch(() => {});
  }

  async close(): Promise<void> {}
}
