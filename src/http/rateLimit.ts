/**
 * Fixed-window rate limiting: a window opens on a key's first request and lasts
 * WINDOW_MS; within it at most `limit` requests pass. Counted in process memory, or in a
 * shared store (Redis, or PostgreSQL without Redis) when several processes count together.
 *
 * A limiter never fails a request and never makes one wait on an unreachable store: while
 * the shared store is down, each process counts on its own (so a brute force stays
 * throttled), says so once in the log, and goes back to the shared count when it returns.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';

export const WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the window frees a request (never 0 while blocked). */
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

export function decide(count: number, limit: number, msLeft: number): RateDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(msLeft / 1000)),
  };
}

/** Entries above this count trigger a sweep of expired windows, bounding memory. */
const SWEEP_THRESHOLD = 10_000;

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(private readonly clock: Clock) {}

  async hit(key: string, limit: number): Promise<RateDecision> {
    const now = this.clock.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      if (this.windows.size >= SWEEP_THRESHOLD) this.sweep(now);
      window = { count: 0, resetAt: now + WINDOW_MS };
      this.windows.set(key, window);
    }
    window.count += 1;
    return decide(window.count, limit, window.resetAt - now);
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
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
