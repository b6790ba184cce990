/**
 * Rate limiting per key: "100 requests per minute" holds for every minute, not only for
 * windows that open and close at fixed times. A fixed window let a client spend its limit
 * just before the window ended and again just after it: twice the limit in a few seconds.
 *
 * The rule: every answered request counts against its key for the whole second (UTC) it was
 * made in and the 59 seconds that follow; a request passes while fewer than `limit` requests
 * count. So any 60 consecutive whole seconds hold at most `limit` answered requests, and a
 * request counts for between 59 and 60 s. Refused requests count for nothing: a client that
 * keeps retrying is not locked out longer than one that waits.
 *
 * Why counts per second (a sliding log by whole seconds) and not the alternatives:
 * - an exact sliding log keeps each request's time, so its memory grows with the limit, and
 *   a key may carry a limit up to 100,000,000 per minute;
 * - the sliding-window counter (the current and the previous window, the previous weighted by
 *   how much of it is still within the last 60 s) is an estimate: requests at the end of one
 *   window and at the end of the next can still pass ~2× the limit within 60 s, and one
 *   burst at the start of a window keeps a small limit refused for well over a minute;
 * - GCRA / a token bucket spreads the refill, but after a burst it lets one more request
 *   through every 60/limit s, so a 60 s span can again hold nearly 2× the limit.
 * Sixty counters per key cost the same for any limit, decide exactly (a request either
 * counts or does not), tell exactly when a request will pass again, and are small enough for
 * one Lua script in Redis and one statement (an integer array in a row) in PostgreSQL.
 *
 * Counted in process memory, or in a shared store (Redis, or PostgreSQL without Redis) when
 * several processes count together; all three apply the rule above, with the same counters.
 * A limiter never fails a request and never makes one wait on an unreachable store: while
 * the shared store is down, each process counts on its own (so a brute force stays
 * throttled), says so once in the log, and goes back to the shared count when it returns.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';

export const WINDOW_MS = 60_000;
/** The counters' width: a request counts from its second's start, so at most this much more than the window. */
export const SECOND_MS = 1000;
/** Counters per key: one per second of the window. */
export const WINDOW_SECONDS = WINDOW_MS / SECOND_MS;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /**
   * Whole seconds until the count frees a request (never 0): while blocked, until a request
   * would pass; otherwise until the oldest counted request stops counting.
   */
  resetSeconds: number;
}

export interface RateLimiter {
  /** Counts one request against `key`. Never rejects. */
  hit(key: string, limit: number): Promise<RateDecision>;
  close(): Promise<void>;
}

/** A store that counts for every process. Its `hit` rejects when the store cannot answer. */
export interface SharedCounter {
  /** For the log: `Redis`, `PostgreSQL`. */
  readonly name: string;
  /** False while the store is known to be unreachable, so a request need not try it. */
  readonly connected: boolean;
  hit(key: string, limit: number): Promise<RateDecision>;
  close(): Promise<void>;
}

/** The second (since the epoch) that `ms` falls in: the counter a request made then goes to. */
export function secondOf(ms: number): number {
  return Math.floor(ms / SECOND_MS);
}

/**
 * The decision for one request, from the key's count after it (`total`, with the request
 * when it passed) and `freedAt`: the second at which enough counted requests stop counting
 * (see `secondFreeing`).
 */
export function decide(allowed: boolean, total: number, limit: number, freedAt: number, now: number): RateDecision {
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - total),
    resetSeconds: Math.max(1, Math.ceil((freedAt * SECOND_MS - now) / SECOND_MS)),
  };
}

/**
 * How many counted requests must stop counting before the key's count changes as the
 * headers promise: one, or while blocked, enough to let a request pass (more than one only
 * when the key's limit was lowered below its count).
 */
export function requestsToFree(total: number, limit: number): number {
  return Math.max(1, total - limit + 1);
}

/**
 * The second at which `need` counted requests will have stopped counting, given the key's
 * counters newest first (`counts[i]` for second `newest - i`). A request of second s stops
 * counting when second s + WINDOW_SECONDS begins.
 */
export function secondFreeing(counts: ArrayLike<number>, newest: number, need: number): number {
  let freed = 0;
  for (let i = counts.length - 1; i >= 0; i--) {
    freed += counts[i] as number;
    if (freed >= need) return newest - i + WINDOW_SECONDS;
  }
  return newest + WINDOW_SECONDS;
}

/** A key's counters: `counts[i]` requests in second `newest - i`, `total` their sum. */
interface Counters {
  counts: Int32Array;
  newest: number;
  total: number;
}

/** Moves `counters` on to `second`: older seconds shift along, those out of the window drop out. */
function advance(counters: Counters, second: number): void {
  const shift = second - counters.newest;
  // A second earlier than the newest (the clock stepped back) counts as the newest: never less.
  if (shift <= 0) return;
  const { counts } = counters;
  if (shift >= WINDOW_SECONDS) {
    counts.fill(0);
    counters.total = 0;
  } else {
    for (let i = WINDOW_SECONDS - shift; i < WINDOW_SECONDS; i++) counters.total -= counts[i] as number;
    counts.copyWithin(shift, 0, WINDOW_SECONDS - shift);
    counts.fill(0, 0, shift);
  }
  counters.newest = second;
}

/** Entries above this count trigger a sweep of keys with nothing counted, bounding memory. */
const SWEEP_THRESHOLD = 10_000;

export class MemoryRateLimiter implements RateLimiter {
  private readonly counters = new Map<string, Counters>();

  constructor(private readonly clock: Clock) {}

  async hit(key: string, limit: number): Promise<RateDecision> {
    const now = this.clock.now();
    const second = secondOf(now);
    let counters = this.counters.get(key);
    if (counters) advance(counters, second);
    else {
      if (this.counters.size >= SWEEP_THRESHOLD) this.sweep(second);
      counters = { counts: new Int32Array(WINDOW_SECONDS), newest: second, total: 0 };
      this.counters.set(key, counters);
    }
    const allowed = counters.total < limit;
    if (allowed) {
      counters.counts[0] = (counters.counts[0] as number) + 1;
      counters.total += 1;
    }
    const freedAt = secondFreeing(counters.counts, counters.newest, requestsToFree(counters.total, limit));
    return decide(allowed, counters.total, limit, freedAt, now);
  }

  private sweep(second: number): void {
    for (const [key, counters] of this.counters) {
      if (counters.newest <= second - WINDOW_SECONDS) this.counters.delete(key);
    }
  }

  async close(): Promise<void> {}
}

/**
 * Counts in `shared`; while it is unreachable, in this process's memory instead. One
 * warning per outage (not per request), one line when shared counting resumes.
 */
export class FallbackRateLimiter implements RateLimiter {
  private outage = false;

  constructor(
    private readonly shared: SharedCounter,
    private readonly local: RateLimiter,
    private readonly log: FastifyBaseLogger,
  ) {}

  async hit(key: string, limit: number): Promise<RateDecision> {
    if (this.shared.connected) {
      try {
        const decision = await this.shared.hit(key, limit);
        if (this.outage) {
          this.outage = false;
          this.log.info({ store: this.shared.name }, 'rate limits are counted in the shared store again');
        }
        return decision;
      } catch (error) {
        this.noteOutage(error);
      }
    } else {
      this.noteOutage(null);
    }
    return this.local.hit(key, limit);
  }

  private noteOutage(error: unknown): void {
    if (this.outage) return;
    this.outage = true;
    this.log.warn(
      { store: this.shared.name, ...(error ? { err: error } : {}) },
      'rate-limit store unreachable: each process counts its own requests until it returns',
    );
  }

  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.local.close()]);
  }
}
