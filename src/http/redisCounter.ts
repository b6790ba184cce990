/**
 * Rate-limit counters in Redis (`REDIS_URL`), shared by every process. Built to fail fast:
 * a request must never wait for Redis to come back (FallbackRateLimiter counts in memory
 * meanwhile), so there is no offline queue, no retry of a command, and a short time-out.
 *
 * Two things keep the fallback from letting more through than its rule (README "Rate limits
 * across processes": at most the limit per process): a busy event loop is not taken for a
 * stalled Redis (see COMMAND_TIMEOUT_MS), and the local count of a key starts from the last
 * count Redis gave this process for it (seededLocal), not from zero.
 */
import { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import {
  decide,
  type RateDecision,
  type RateLimiter,
  type SharedCounter,
  secondOf,
  WINDOW_SECONDS,
} from './rateLimit.js';

/**
 * A hit is one round trip to a nearby Redis (well under a millisecond); anything near this
 * long means Redis is stalled, and the request is better served by the local count. Timed
 * here, not by ioredis's `commandTimeout`: when this process's own event loop is busy (a
 * burst of requests), the time-out and Redis's reply become due in the same turn, and timers
 * run before the loop reads its sockets, so a reply that came back in a millisecond was
 * declared late — a healthy Redis "unreachable". Once the time is up the loop reads its
 * sockets once more (setImmediate runs after that), and only a hit still unanswered then
 * has timed out. A refused or closed connection still fails at once (no offline queue).
 */
const COMMAND_TIMEOUT_MS = 250;

/** Keys remembered with their last shared count above this number trigger a sweep of stale ones. */
const SEEN_SWEEP_THRESHOLD = 10_000;

/** The count Redis last gave for a key (its requests in the window, `second` being when). */
interface SeenCount {
  second: number;
  total: number;
}

export class RedisTimeoutError extends Error {
  constructor() {
    super(`Redis command timed out after ${COMMAND_TIMEOUT_MS} ms`);
    this.name = 'RedisTimeoutError';
  }
}

/** `command`, or a RedisTimeoutError once COMMAND_TIMEOUT_MS passed and the loop read its sockets once more. */
async function withinTimeout<T>(command: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(new RedisTimeoutError())), COMMAND_TIMEOUT_MS);
  });
  try {
    // A late reply or rejection of `command` is handled by the race and ignored.
    return await Promise.race([command, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One key's counters as a hash, a field per second (see http/rateLimit.ts for the rule), read,
 * pruned and counted in one atomic script, so requests of every process see each other's.
 * ARGV: the current second, the limit, WINDOW_SECONDS. Returns whether the request passed,
 * the count after it, and the second at which enough counted requests stop counting
 * (secondFreeing). The key expires one window after its newest counter, which then counts
 * for nothing.
 */
const HIT_SCRIPT = `
local now, limit, span = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local fields = redis.call('HGETALL', KEYS[1])
local seconds, counts, stale, total = {}, {}, {}, 0
for i = 1, #fields, 2 do
  local second = tonumber(fields[i])
  if second <= now - span then
    stale[#stale + 1] = fields[i]
  else
    seconds[#seconds + 1] = second
    counts[second] = tonumber(fields[i + 1])
    total = total + counts[second]
  end
end
if #stale > 0 then redis.call('HDEL', KEYS[1], unpack(stale)) end
local allowed = 0
if total < limit then
  allowed = 1
  total = total + 1
  redis.call('HINCRBY', KEYS[1], now, 1)
  if counts[now] == nil then
    seconds[#seconds + 1] = now
    counts[now] = 0
  end
  counts[now] = counts[now] + 1
end
redis.call('PEXPIRE', KEYS[1], (span + 1) * 1000)
table.sort(seconds)
local need, freed, freedAt = math.max(1, total - limit + 1), 0, now + span
for _, second in ipairs(seconds) do
  freed = freed + counts[second]
  if freed >= need then
    freedAt = second + span
    break
  end
end
return {allowed, total, freedAt}
`;

type WithHit = Redis & {
  rateLimitHit(key: string, second: number, limit: number, span: number): Promise<[number, number, number]>;
};

export class RedisCounter implements SharedCounter {
  readonly name = 'Redis';
  private readonly redis: WithHit;
  /**
   * `affitrack:rls:<deployment id>:`, once read (deployments sharing one Redis count apart).
   * `rls`, not the fixed windows' `rl`: a hash cannot take the place of one of their counters
   * while it lives (a minute after an upgrade).
   */
  private namespace: string | null = null;
  /** Per key, the count Redis last answered with: where the local count starts in an outage. */
  private readonly seen = new Map<string, SeenCount>();

  /** `deploymentId` reads the id every process of this deployment shares (db/deployment.ts). */
  constructor(
    url: string,
    private readonly deploymentId: () => Promise<string>,
    private readonly clock: Clock,
  ) {
    this.redis = new Redis(url, {
      // Refuse commands at once while disconnected instead of queueing them until reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // The default reconnect schedule (50 ms more per attempt, at most 2 s) stays: counting
      // resumes by itself within ~2 s of Redis being back.
    }) as WithHit;
    // EVALSHA with the script's hash; the script is sent again only if Redis lost it.
    this.redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    // Connection errors surface as rejected hits (and FallbackRateLimiter's one warning).
    this.redis.on('error', () => {});
  }

  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  async hit(key: string, limit: number): Promise<RateDecision> {
    try {
      this.namespace ??= `affitrack:rls:${await this.deploymentId()}:`;
      const now = this.clock.now();
      const second = secondOf(now);
      const [allowed, total, freedAt] = await withinTimeout(
        this.redis.rateLimitHit(this.namespace + key, second, limit, WINDOW_SECONDS),
      );
      this.remember(key, { second, total });
      return decide(allowed === 1, total, limit, freedAt, now);
    } catch (error) {
      // A stalled Redis keeps the connection "ready": drop it, so later requests see it as
      // disconnected and skip it until a fresh connection passes the ready check.
      if (error instanceof RedisTimeoutError) this.redis.disconnect(true);
      throw error;
    }
  }

  private remember(key: string, count: SeenCount): void {
    if (!this.seen.has(key) && this.seen.size >= SEEN_SWEEP_THRESHOLD) {
      for (const [old, { second }] of this.seen) {
        if (second <= count.second - WINDOW_SECONDS) this.seen.delete(old);
      }
    }
    this.seen.set(key, count);
  }

  /**
   * The requests Redis counted for `key` that may still count at `now`: its last answer's
   * count, as if all were made in that answer's second (they were made then or earlier, so
   * they stop counting by its end of window at the latest — the safe side in an outage).
   */
  private seenCount(key: string, now: number): number {
    const count = this.seen.get(key);
    if (!count) return 0;
    if (count.second <= secondOf(now) - WINDOW_SECONDS) {
      this.seen.delete(key);
      return 0;
    }
    return count.total;
  }

  /**
   * `local` (this process's count, for while Redis is unreachable) starting each key from
   * the count Redis last gave this process for it. From zero, each process would let a full
   * limit through on top of what the deployment already used: a 100/min key that had spent
   * 80 in Redis got 100 more per process. Started from the shared count, every process
   * stays within the limit, its own requests in Redis included.
   */
  seededLocal(local: RateLimiter): RateLimiter {
    return {
      hit: async (key, limit) => {
        const already = this.seenCount(key, this.clock.now());
        const decision = await local.hit(key, limit - already);
        return { ...decision, limit };
      },
      close: () => local.close(),
    };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
