/**
 * Rate limits in Redis under a burst (probe finding C3). A Redis of the test's own (a
 * `redis-server` on a free port, never the shared one) serves two counters standing in for
 * two processes. A burst keeps this process's event loop busy for longer than the command
 * time-out: that is not an outage, and the limit holds exactly. A real outage falls back to
 * per-process counting that starts from the count Redis last gave, so each process stays
 * within the limit, the requests it made before the outage included.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { ManualClock } from '../../src/clock.js';
import { FallbackRateLimiter, MemoryRateLimiter, type RateLimiter } from '../../src/http/rateLimit.js';
import { RedisCounter } from '../../src/http/redisCounter.js';
import { describeOrSkip, REDIS_SKIP_REASON, REDIS_URL } from '../helpers.js';
import { freePort } from '../net.js';
import { waitFor } from '../wait.js';
import { OwnRedis, ownRedisSkipReason } from './ownRedis.js';

const LIMIT = 100;
/** Longer than the 250 ms command time-out, as a burst of requests can keep the loop. */
const BUSY_MS = 600;

const skip = ownRedisSkipReason(REDIS_URL, REDIS_SKIP_REASON);

/** Keeps the event loop busy, as handling a burst of requests does. */
function busyLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {}
}

describeOrSkip('rate limits in Redis under a burst', { skip }, () => {
  let server: OwnRedis;
  // The clock stands still: every request falls in one second, so the window never moves.
  const clock = new ManualClock(Date.UTC(2026, 10, 28, 12));
  const opened: RateLimiter[] = [];

  before(async () => {
    server = new OwnRedis(await freePort());
    await server.start();
  });
  after(async () => {
    for (const limiter of opened) await limiter.close();
    await server.stop();
  });

  /** Two "processes" of one deployment: each a Redis counter with its own connection and local fallback. */
  async function twoProcesses(deployment: string) {
    return Promise.all(
      [0, 1].map(async () => {
        const warnings: string[] = [];
        const log = { warn: (_: unknown, line: string) => warnings.push(line), info: () => {} };
        const counter = new RedisCounter(server.url, async () => deployment, clock);
        const limiter = new FallbackRateLimiter(
          counter,
          counter.seededLocal(new MemoryRateLimiter(clock)),
          log as unknown as FastifyBaseLogger,
        );
        opened.push(limiter);
        await waitFor('the connection to Redis', () => counter.connected, 10_000, 20);
        return { limiter, warnings };
      }),
    );
  }

  it('holds a limit of 100 exactly over a burst of 400 on two processes while the event loop is busy', async () => {
    const processes = await twoProcesses(`burst-${Date.now()}`);
    // Once warm (the deployment id read), a hit writes its command at once: all 400 are sent
    // before the loop is kept busy, and their replies come back while it is.
    for (const p of processes) await p.limiter.hit('warm-up', LIMIT);
    const hits = Array.from({ length: 400 }, (_, i) => processes[i % 2]?.limiter.hit('key', LIMIT));
    busyLoop(BUSY_MS);
    const decisions = await Promise.all(hits);
    assert.equal(decisions.filter((d) => d?.allowed).length, LIMIT);
    assert.deepEqual(
      processes.map((p) => p.warnings),
      [[], []],
      'a busy event loop is not an outage',
    );
  });

  it('keeps each process within the limit in an outage, counting from the last shared count', async () => {
    const [a, b] = await twoProcesses(`outage-${Date.now()}`);
    assert.ok(a && b);
    // 60 of the 100 spent through Redis, 30 by each process, one after the other.
    for (let i = 0; i < 60; i++) assert.equal((await (i % 2 === 0 ? a : b).limiter.hit('key', LIMIT)).allowed, true);

    await server.stop();
    const passed = async (p: typeof a) => {
      let allowed = 0;
      for (let i = 0; i < 200; i++) if ((await p.limiter.hit('key', LIMIT)).allowed) allowed += 1;
      return allowed;
    };
    // a last saw a count of 59, b of 60: each lets through what is left of the limit, no more.
    assert.deepEqual([await passed(a), await passed(b)], [41, 40]);
    for (const p of [a, b]) assert.equal(p.warnings.length, 1, 'one warning per outage');
    const last = await a.limiter.hit('key', LIMIT);
    assert.deepEqual([last.allowed, last.limit, last.remaining], [false, LIMIT, 0]);
  });
});
