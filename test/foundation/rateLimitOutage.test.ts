/**
 * Rate limits while Redis is unreachable (issue #12, point 1). A Redis of the test's own (a
 * second `redis-server` on a free port — never the shared one) is stopped, started again,
 * and frozen (SIGSTOP), under two app instances on one database. While it is gone every
 * request is answered without waiting for it, each process counts on its own (so limits —
 * API keys, the application form, dashboard sign-ins — still hold), one warning is logged
 * per outage, and shared counting resumes by itself.
 */
import assert from 'node:assert/strict';
import { after, before, it, mock } from 'node:test';
import { RedisCounter } from '../../src/http/redisCounter.js';
import { DashboardClient } from '../dashboard/client.js';
import {
  anotherHandle,
  createTestDatabase,
  createTestEnv,
  DIALECTS,
  describeOrSkip,
  REDIS_SKIP_REASON,
  REDIS_URL,
  type TestEnv,
} from '../helpers.js';
import { freePort } from '../net.js';
import { waitFor } from '../wait.js';
import { OwnRedis, ownRedisSkipReason } from './ownRedis.js';

const LIMIT = 10;
const APPLY_LIMIT = 3;
const OUTAGE_LINE = 'rate-limit store unreachable';
const RESUMED_LINE = 'counted in the shared store again';

const skip = ownRedisSkipReason(REDIS_URL, REDIS_SKIP_REASON);
const dialect = DIALECTS[DIALECTS.length - 1] ?? 'sqlite';

describeOrSkip(`rate limits while Redis is unreachable (${dialect})`, { skip }, () => {
  let redis: OwnRedis;
  let instances: TestEnv[];
  const cleanup: Array<() => Promise<void>> = [];

  before(async () => {
    redis = new OwnRedis(await freePort());
    await redis.start();
    cleanup.push(() => redis.stop());
    const database = await createTestDatabase(dialect);
    cleanup.push(() => database.drop());
    const env = {
      REDIS_URL: redis.url,
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      APPLY_RATE_LIMIT_PER_MINUTE: String(APPLY_LIMIT),
    };
    const first = await createTestEnv(dialect, { env, database });
    cleanup.push(async () => {
      await first.close();
      await first.ctx.db.close();
    });
    const secondHandle = anotherHandle(database);
    const second = await createTestEnv(dialect, { env, database: secondHandle, clock: first.clock });
    cleanup.push(async () => {
      await second.close();
      await secondHandle.drop();
    });
    instances = [first, second];
  });
  after(async () => {
    redis.thaw();
    for (const step of cleanup.reverse()) await step();
  });

  /** `n` requests with one new key, alternating between the instances (or on `only`); their statuses. */
  async function burst(n: number, only?: TestEnv): Promise<number[]> {
    const [first] = instances as [TestEnv, TestEnv];
    const { apiKey } = await first.createBrand();
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const env = only ?? (instances[i % 2] as TestEnv);
      statuses.push((await env.request('GET', '/api/v1/brand', { key: apiKey })).status);
    }
    return statuses;
  }
  const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;
  /**
   * Every time a request asks Redis (both instances), and how each ask ended. "Answers at
   * once" is checked by what the limiter did, not by a stopwatch a busy machine could break:
   * an ask either waits for Redis until the client's command time-out, or is refused at once
   * (connection refused, or the client already knows the connection is gone), and every
   * request was answered, so every ask had ended. The original defect waited ~5 s on each.
   */
  const redisHits = mock.method(RedisCounter.prototype, 'hit');
  after(() => redisHits.mock.restore());
  const asked = (since: number) => redisHits.mock.callCount() - since;
  /** How many asks since `since` waited for Redis until they timed out. */
  async function waitedForRedis(since: number): Promise<number> {
    const outcomes = await Promise.allSettled(redisHits.mock.calls.slice(since).map((call) => call.result));
    return outcomes.filter((o) => o.status === 'rejected' && /timed out/i.test(String(o.reason))).length;
  }
  const linesOf = (env: TestEnv, text: string) => env.logs.filter((line) => line.includes(text)).length;

  it('counts the requests of both instances together while Redis is up', async () => {
    const before = redisHits.mock.callCount();
    const statuses = await burst(2 * LIMIT);
    assert.equal(count(statuses, 200), LIMIT);
    assert.equal(count(statuses, 429), LIMIT);
    assert.equal(asked(before), 2 * LIMIT, 'every request asked Redis');
  });

  it('answers at once and counts per process while Redis is stopped, warning once per instance', async () => {
    await redis.stop();
    const asks = redisHits.mock.callCount();
    const [first, second] = instances as [TestEnv, TestEnv];
    const perProcess = [await burst(LIMIT + 5, first), await burst(LIMIT + 5, second)];
    for (const statuses of perProcess) {
      assert.deepEqual(statuses.slice(0, LIMIT), Array(LIMIT).fill(200));
      assert.deepEqual(statuses.slice(LIMIT), Array(5).fill(429), 'a brute force stays throttled');
    }

    const applied: number[] = [];
    for (let i = 0; i < APPLY_LIMIT + 2; i++) {
      const res = await first.request('POST', '/api/public/partners/apply', {
        key: null,
        body: { brandSlug: first.brand.slug, name: `Applicant ${i}`, email: `a${i}@example.com` },
      });
      applied.push(res.status);
    }
    assert.deepEqual(applied, [...Array(APPLY_LIMIT).fill(201), 429, 429]);

    const signIns: number[] = [];
    const browser = new DashboardClient(first);
    await browser.get('/dashboard/login');
    for (let i = 0; i < 15; i++) {
      signIns.push(
        (await browser.post('/dashboard/login', { email: 'someone@example.com', password: 'guess' })).status,
      );
    }
    assert.notEqual(signIns[0], 429);
    assert.equal(signIns.at(-1), 429, `dashboard sign-ins: ${signIns.join(',')}`);

    assert.equal(await waitedForRedis(asks), 0, 'no request waited for Redis');
    for (const env of instances) assert.equal(linesOf(env, OUTAGE_LINE), 1, 'one warning per outage, not per request');
  });

  it('counts in Redis again by itself once Redis is back', async () => {
    await redis.start();
    // Each instance reconnects on its own schedule (at most ~2 s apart from the restart).
    for (const env of instances) {
      await waitFor(
        'shared counting to resume',
        () => linesOf(env, RESUMED_LINE) === 1 || burst(1, env).then(() => false),
        15_000,
        200,
      );
    }
    const statuses = await burst(2 * LIMIT);
    assert.equal(count(statuses, 200), LIMIT, `statuses: ${statuses.join(',')}`);
    assert.equal(count(statuses, 429), LIMIT);
    for (const env of instances) assert.equal(linesOf(env, RESUMED_LINE), 1);
  });

  it('answers and counts per process while Redis is frozen, then resumes when it thaws', async () => {
    redis.freeze();
    const asks = redisHits.mock.callCount();
    const [first] = instances as [TestEnv, TestEnv];
    const statuses = await burst(LIMIT + 5, first);
    assert.deepEqual(statuses, [...Array(LIMIT).fill(200), ...Array(5).fill(429)]);
    assert.ok(asked(asks) >= 1, 'the frozen Redis was asked');
    assert.equal(
      await waitedForRedis(asks),
      1,
      'only the first request waited for the frozen Redis (its time-out); the rest were answered at once',
    );
    assert.equal(linesOf(first, OUTAGE_LINE), 2, 'a second outage, a second warning');

    redis.thaw();
    await waitFor(
      'shared counting to resume',
      () => linesOf(first, RESUMED_LINE) === 2 || burst(1, first).then(() => false),
      15_000,
      200,
    );
  });
});
