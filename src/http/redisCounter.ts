/**
 * Rate-limit windows in Redis (`REDIS_URL`), shared by every process. Built to fail fast:
 * a request must never wait for Redis to come back (FallbackRateLimiter counts in memory
 * meanwhile), so there is no offline queue, no retry of a command, and a short time-out.
 */
import { Redis } from 'ioredis';
import { decide, type RateDecision, type SharedCounter, WINDOW_MS } from './rateLimit.js';

/**
 * A hit is one round trip to a nearby Redis (well under a millisecond); anything near this
 * long means Redis is stalled, and the request is better served by the local count.
 */
const COMMAND_TIMEOUT_MS = 250;

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

type WithHit = Redis & { rateLimitHit(key: string, windowMs: number): Promise<[number, number]> };

export class RedisCounter implements SharedCounter {
  readonly name = 'Redis';
  private readonly redis: WithHit;
  /** `affitrack:rl:<deployment id>:`, once read (deployments sharing one Redis count apart). */
  private namespace: string | null = null;

  /** `deploymentId` reads the id every process of this deployment shares (db/deployment.ts). */
  constructor(
    url: string,
    private readonly deploymentId: () => Promise<string>,
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
      this.namespace ??= `affitrack:rl:${await this.deploymentId()}:`;
      const [count, ttl] = await this.redis.rateLimitHit(this.namespace + key, WINDOW_MS);
      return decide(count, limit, ttl);
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
