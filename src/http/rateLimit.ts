/**
 * Fixed-window rate limiting: a window opens on a key's first request and lasts
 * WINDOW_MS; within it at most `limit` requests pass. Counted in process memory, or in
 * Redis when several processes must count together.
 */
import { Redis } from 'ioredis';
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
  hit(key: string, limit: number): Promise<RateDecision>;
  close(): Promise<void>;
}

function decide(count: number, limit: number, msLeft: number): RateDecision {
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
 * INCR and the window's expiry in one atomic script, so concurrent processes can never
 * leave a counter without an expiry.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly namespace = 'affitrack:rl:',
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
    // Connection errors surface on the commands that hit them; do not crash on the event.
    this.redis.on('error', () => {});
  }

  async hit(key: string, limit: number): Promise<RateDecision> {
    const [count, ttl] = (await this.redis.eval(HIT_SCRIPT, 1, this.namespace + key, WINDOW_MS)) as [number, number];
    return decide(count, limit, ttl);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
