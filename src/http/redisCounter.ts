/**
 * Rate-limit counters in Redis (`REDIS_URL`), shared by every process. Built to fail fast:
 * a request must never wait for Redis to come back (FallbackRateLimiter counts in memory
 * meanwhile), so there is no offline queue, no retry of a command, and a short time-out.
 */
import { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import { decide, type RateDecision, type SharedCounter, secondOf, WINDOW_SECONDS } from './rateLimit.js';

/**
 * A hit is one round trip to a nearby Redis (well under a millisecond); anything near this
 * long means Redis is stalled, and the request is better served by the local count.
 */
const COMMAND_TIMEOUT_MS = 250;

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
      commandTimeout: COMMAND_TIMEOUT_MS,
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
      const [allowed, total, freedAt] = await this.redis.rateLimitHit(
        this.namespace + key,
        secondOf(now),
        limit,
        WINDOW_SECONDS,
      );
      return decide(allowed === 1, total, limit, freedAt, now);
    } catch (error) {
      // A stalled Redis keeps the connection "ready": drop it, so later requests see it as
      // disconnected and skip it until a fresh connection passes the ready check.
      if (error instanceof Error && /timed out/i.test(error.message)) this.redis.disconnect(true);
      throw error;
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
