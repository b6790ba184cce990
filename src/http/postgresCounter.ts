/**
 * Rate-limit windows in PostgreSQL, for deployments on PostgreSQL without Redis: every
 * process of the brand counts in one row per key (DESIGN.md: shared counters live in Redis
 * or PostgreSQL when several processes serve one brand). This is on the path of every keyed
 * request, so a count is one statement (one round trip, compiled once) on an UNLOGGED table.
 *
 * A busy key would make every request queue on its row lock, and spend a round trip each.
 * So hits on one key are coalesced per process, like a group commit: while one statement
 * for the key is in flight, the hits that arrive wait and then go as one statement that adds
 * their number. The counter stays exact — each hit gets its own place in the count — and a
 * client hammering one key costs one statement per round trip, not one per request.
 */
import { sql } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { decide, type RateDecision, type SharedCounter, WINDOW_MS } from './rateLimit.js';

/**
 * Adds `hits` to the key's window, or opens a new window with them (first use, or the old
 * window has ended), atomically: statements of other processes on the key queue on its row.
 */
const addHits = prepared(4, (q, key: string, hits: number, now: number, resetAt: number) =>
  q
    .insertInto('rate_limit_windows')
    .values({ key, count: hits, reset_at: resetAt })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        count: sql<number>`case when rate_limit_windows.reset_at <= ${now} then excluded.count else rate_limit_windows.count + excluded.count end`,
        reset_at: sql<number>`case when rate_limit_windows.reset_at <= ${now} then excluded.reset_at else rate_limit_windows.reset_at end`,
      }),
    )
    .returning(['count', 'reset_at']),
);

const deleteEndedWindows = prepared(1, (q, now: number) =>
  q.deleteFrom('rate_limit_windows').where('reset_at', '<=', now),
);

interface Waiting {
  limit: number;
  resolve(decision: RateDecision): void;
  reject(error: unknown): void;
}

export class PostgresCounter implements SharedCounter {
  readonly name = 'PostgreSQL';
  /** The pool reconnects by itself; a failed hit is the only sign of an outage. */
  readonly connected = true;
  /** Hits waiting for the key's statement in flight to return. */
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly inFlight = new Set<string>();
  private nextSweepAt = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  hit(key: string, limit: number): Promise<RateDecision> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push({ limit, resolve, reject });
      else this.waiting.set(key, [{ limit, resolve, reject }]);
      if (!this.inFlight.has(key)) void this.count(key);
    });
  }

  private async count(key: string): Promise<void> {
    const batch = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    this.inFlight.add(key);
    try {
      const now = this.clock.now();
      const row = await addHits.first(this.db.standaloneWriter, key, batch.length, now, now + WINDOW_MS);
      if (!row) throw new Error('rate-limit upsert returned no row');
      const before = row.count - batch.length;
      for (const [i, hit] of batch.entries()) hit.resolve(decide(before + i + 1, hit.limit, row.reset_at - now));
      if (now >= this.nextSweepAt) this.sweep(now);
    } catch (error) {
      for (const hit of batch) hit.reject(error);
    } finally {
      this.inFlight.delete(key);
      if (this.waiting.has(key)) void this.count(key);
    }
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
