/**
 * Rate-limit counters in PostgreSQL, for deployments on PostgreSQL without Redis: every
 * process of the brand counts in one row per key (DESIGN.md: shared counters live in Redis
 * or PostgreSQL when several processes serve one brand). This is on the path of every keyed
 * request, so a count is one statement (one round trip, compiled once) on an UNLOGGED table.
 * The row holds the key's per-second counters as an array (http/rateLimit.ts for the rule).
 *
 * A busy key would make every request queue on its row lock, and spend a round trip each.
 * So hits on one key are coalesced per process, like a group commit: while one statement
 * for the key is in flight, the hits that arrive wait and then go as one statement that adds
 * those of them that fit under the limit. The count stays exact — each hit that passes gets
 * its own place in the count — and a client hammering one key costs one statement per round
 * trip, not one per request.
 */
import { sql } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import {
  decide,
  type RateDecision,
  requestsToFree,
  type SharedCounter,
  secondFreeing,
  secondOf,
  WINDOW_SECONDS,
} from './rateLimit.js';

const SPAN = sql.lit(WINDOW_SECONDS);

/**
 * Adds to the key's counters as many of `hits` as fit under `limit`, atomically: statements
 * of other processes on the key queue on its row, and each reads what the one before wrote.
 * The stored counters, newest first, are moved on to `second` (those of seconds out of the
 * window drop off the end; a second earlier than the stored one counts as it, never less),
 * then the hits that fit go to the newest. `admitted` (how many of this statement's hits
 * passed) is stored only so that RETURNING can tell it; the counters come back for the
 * headers (secondFreeing).
 */
const addHits = prepared(4, (q, key: string, hits: number, second: number, limit: number) => ({
  compile: () =>
    sql<{ counts: number[]; second: number; admitted: number }>`
      insert into rate_limit_windows as w (key, counts, second, admitted)
      values (
        ${key},
        array[least(${hits}::integer, ${limit}::integer)] || array_fill(0, array[${SPAN} - 1]),
        ${second}::bigint,
        least(${hits}::integer, ${limit}::integer)
      )
      on conflict (key) do update set (counts, second, admitted) = (
        select array[moved.counts[1] + fit.n] || moved.counts[2:${SPAN}], moved.second, fit.n
        from (
          select
            greatest(w.second, ${second}::bigint) as second,
            array_fill(0, array[least(${SPAN}, greatest(0, ${second}::bigint - w.second))::integer])
              || w.counts[1:${SPAN} - greatest(0, ${second}::bigint - w.second)] as counts
        ) moved
        cross join lateral (
          select least(
            ${hits}::integer,
            greatest(0, ${limit}::integer - (select coalesce(sum(c), 0) from unnest(moved.counts) c))
          )::integer as n
        ) fit
      )
      returning w.counts, w.second, w.admitted`.compile(q),
}));

const deleteEndedCounters = prepared(1, (q, second: number) =>
  q.deleteFrom('rate_limit_windows').where('second', '<=', second),
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
      const limit = (batch[0] as Waiting).limit;
      const row = await addHits.first(this.db.standaloneWriter, key, batch.length, secondOf(now), limit);
      if (!row) throw new Error('rate-limit upsert returned no row');
      const second = Number(row.second);
      let total = 0;
      for (const count of row.counts) total += count;
      const before = total - row.admitted;
      for (const [i, hit] of batch.entries()) {
        const allowed = i < row.admitted;
        const counted = allowed ? before + i + 1 : total;
        const freedAt = secondFreeing(row.counts, second, requestsToFree(counted, hit.limit));
        hit.resolve(decide(allowed, counted, hit.limit, freedAt, now));
      }
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
   * once a window, each process deletes the rows whose newest counter is out of the window
   * (they count nothing), without making the request that triggers it wait.
   */
  private sweep(now: number): void {
    this.nextSweepAt = now + WINDOW_SECONDS * 1000;
    deleteEndedCounters.execute(this.db.standaloneWriter, secondOf(now) - WINDOW_SECONDS).catch(() => {});
  }

  async close(): Promise<void> {}
}
