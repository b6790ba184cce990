import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createTestDatabase,
  createTestEnv,
  DIALECTS,
  describeOrSkip,
  expectError,
  REDIS_SKIP_REASON,
  REDIS_URL,
  type TestEnv,
  testedDialects,
} from '../helpers.js';

for (const dialect of testedDialects()) {
  describe(`rate limit per API key (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '5' } });
    });
    after(() => env.close());

    // Each test uses a brand (and key) of its own, so its window opens at its own first
    // request: the tests pass alone and in any order.
    let brands = 0;
    const freshKey = async () => (await env.createBrand(`Rate Limited ${++brands}`)).apiKey;
    /** Moves the clock to the start of the next second (earlier tests leave it anywhere), for exact expectations. */
    const atSecondStart = () => env.clock.set(Math.ceil(env.clock.now() / 1000) * 1000);
    /** Uses up the key's 5 requests of the window opened now. */
    async function exhaust(key: string): Promise<void> {
      for (let i = 0; i < 5; i++) assert.equal((await env.request('GET', '/api/v1/brand', { key })).status, 200);
      expectError(await env.request('GET', '/api/v1/brand', { key }), 429, 'rate_limit_exceeded');
    }

    it('sends RateLimit headers and then 429 with Retry-After', async () => {
      const key = await freshKey();
      for (let i = 1; i <= 5; i++) {
        const res = await env.request('GET', '/api/v1/brand', { key });
        assert.equal(res.status, 200);
        assert.equal(res.headers['ratelimit-limit'], '5');
        assert.equal(res.headers['ratelimit-remaining'], String(5 - i));
        assert.equal(res.headers['ratelimit-reset'], '60');
      }
      env.clock.advance(20_500);
      const blocked = await env.request('GET', '/api/v1/brand', { key });
      expectError(blocked, 429, 'rate_limit_exceeded');
      assert.equal(blocked.headers['retry-after'], '40');
      assert.equal(blocked.headers['ratelimit-remaining'], '0');
      assert.equal(blocked.headers['ratelimit-reset'], '40');
    });

    it('counts each key separately', async () => {
      await exhaust(await freshKey());
      const other = await freshKey();
      assert.equal((await env.request('GET', '/api/v1/brand', { key: other })).status, 200);
    });

    it('frees requests when the window ends', async () => {
      const key = await freshKey();
      await exhaust(key);
      env.clock.advance(20_500);
      expectError(await env.request('GET', '/api/v1/brand', { key }), 429, 'rate_limit_exceeded');
      env.clock.advance(40_000);
      const res = await env.request('GET', '/api/v1/brand', { key });
      assert.equal(res.status, 200);
      assert.equal(res.headers['ratelimit-remaining'], '4');
    });

    it('refuses the burst a fixed window let through at its end: the limit holds for any 60 s', async () => {
      atSecondStart();
      const key = await freshKey();
      const status = async () => (await env.request('GET', '/api/v1/brand', { key })).status;
      // One request opens what used to be a fixed window; the other 4 go 3 s before its end.
      assert.equal(await status(), 200);
      env.clock.advance(57_000);
      for (let i = 0; i < 4; i++) assert.equal(await status(), 200);
      // Just after the old window's end: only the first request has stopped counting.
      env.clock.advance(3_500);
      const after = [];
      for (let i = 0; i < 5; i++) after.push(await status());
      assert.deepEqual(after, [200, 429, 429, 429, 429]);
    });

    it('counts requests for 60 s, not to the end of a window: 3 at 0 s and 2 at 20 s leave 2 at 60.5 s', async () => {
      atSecondStart();
      const key = await freshKey();
      for (let i = 0; i < 3; i++) await env.request('GET', '/api/v1/brand', { key });
      env.clock.advance(20_000);
      for (let i = 0; i < 2; i++) await env.request('GET', '/api/v1/brand', { key });
      env.clock.advance(40_500);
      const res = await env.request('GET', '/api/v1/brand', { key });
      assert.equal(res.status, 200);
      assert.equal(res.headers['ratelimit-remaining'], '2', 'the 2 requests of 20 s still count');
      assert.equal(res.headers['ratelimit-reset'], '20', 'until they stop counting');
    });

    it('answers a Retry-After after which a request passes, and not a second earlier', async () => {
      atSecondStart();
      const key = await freshKey();
      // Spread over the minute: the first frees a request, not the end of a window.
      for (let i = 0; i < 5; i++) {
        assert.equal((await env.request('GET', '/api/v1/brand', { key })).status, 200);
        env.clock.advance(7_300);
      }
      const blocked = await env.request('GET', '/api/v1/brand', { key });
      expectError(blocked, 429, 'rate_limit_exceeded');
      const wait = Number(blocked.headers['retry-after']);
      assert.equal(blocked.headers['ratelimit-reset'], String(wait));
      // The first request stops counting 60 s after its second began: 23.5 s from now, rounded up.
      assert.equal(wait, 24);
      env.clock.advance((wait - 1) * 1000);
      expectError(await env.request('GET', '/api/v1/brand', { key }), 429, 'rate_limit_exceeded');
      env.clock.advance(1000);
      const passed = await env.request('GET', '/api/v1/brand', { key });
      assert.equal(passed.status, 200);
      assert.equal(passed.headers['ratelimit-remaining'], '0');
    });

    it('never lets more than the limit through in any 60 s of steady and bursty traffic', async () => {
      const key = await freshKey();
      const passed: number[] = [];
      // A request every 1.7 s with a burst of 6 every 25th step: ~3 minutes of traffic.
      for (let step = 0; step < 110; step++) {
        const burst = step % 25 === 0 ? 6 : 1;
        for (let i = 0; i < burst; i++) {
          if ((await env.request('GET', '/api/v1/brand', { key })).status === 200) passed.push(env.clock.now());
        }
        env.clock.advance(1_700);
      }
      // The rule: any 60 consecutive whole seconds hold at most the limit.
      const second = (ms: number) => Math.floor(ms / 1000);
      for (const [i, at] of passed.entries()) {
        const within = passed.slice(i).filter((t) => second(t) < second(at) + 60).length;
        assert.ok(within <= 5, `${within} requests passed in the 60 s from ${at}`);
      }
      // Steady traffic keeps passing: about one request per 12 s (5 a minute) over the run.
      assert.ok(passed.length >= 5 * 3, `${passed.length} passed`);
    });

    it('counts requests to paths and methods that match no route: 404 (405) with RateLimit headers, then 429', async () => {
      const key = await freshKey();
      const unrouted: Array<[string, string, number, string]> = [
        ['GET', '/api/v1/nothing', 404, 'not_found'],
        // A known path with another method: 405 (http/knownPaths.ts), counted the same way.
        ['DELETE', '/api/v1/offers', 405, 'method_not_allowed'],
        ['GET', '/api/public/nothing', 404, 'not_found'],
        ['GET', '/api/v1/partner/nothing', 404, 'not_found'],
      ];
      for (const [i, [method, path, status, code]] of unrouted.entries()) {
        const res = await env.request(method, path, { key });
        expectError(res, status, code);
        assert.equal(res.headers['ratelimit-remaining'], String(4 - i), `${method} ${path}`);
      }
      assert.equal((await env.request('GET', '/api/v1/brand', { key })).headers['ratelimit-remaining'], '0');
      for (const [method, path] of unrouted) {
        expectError(await env.request(method, path, { key }), 429, 'rate_limit_exceeded');
      }
    });

    it('answers 404 to a path that matches no route without a key or with an invalid one, counting nothing', async () => {
      for (const key of [undefined, 'afk_not_a_key']) {
        const res = await env.request('GET', '/api/v1/nothing', { key: key ?? null });
        expectError(res, 404, 'not_found');
        assert.equal(res.headers['ratelimit-limit'], undefined);
      }
    });

    it("counts a partner key's requests to paths that match no route against its own limit", async () => {
      const { createPartnerKey } = await import('../../src/modules/partnerKeys/service.js');
      const brand = await env.createBrand(`Rate Limited ${++brands}`);
      const partner = await env.request('POST', '/api/v1/partners', {
        key: brand.apiKey,
        body: { name: 'P', email: 'p@example.com' },
      });
      const { secret } = await createPartnerKey(env.ctx, { brandId: brand.id, partnerId: partner.body.id }, 'probe');
      for (let i = 1; i <= 5; i++) {
        const res = await env.request('GET', '/api/v1/partner/nothing', { key: secret });
        expectError(res, 404, 'not_found');
        assert.equal(res.headers['ratelimit-remaining'], String(5 - i));
      }
      expectError(await env.request('GET', '/api/v1/partner/report', { key: secret }), 429, 'rate_limit_exceeded');
    });

    it('honours a per-key limit set by configuration', async () => {
      const { insertApiKey } = await import('../../src/modules/apiKeys/service.js');
      const { secret } = await env.ctx.db.transact((trx) =>
        insertApiKey(trx, env.clock, { brandId: env.brand.id, rateLimitPerMinute: 1000 }),
      );
      for (let i = 0; i < 20; i++)
        assert.equal((await env.request('GET', '/api/v1/brand', { key: secret })).status, 200);
      const res = await env.request('GET', '/api/v1/brand', { key: secret });
      assert.equal(res.headers['ratelimit-limit'], '1000');
    });
  });
}

describeOrSkip('rate limit shared through Redis', { skip: REDIS_URL ? false : REDIS_SKIP_REASON }, () => {
  it('counts requests of two processes on one key together', async () => {
    const database = await createTestDatabase(DIALECTS[DIALECTS.length - 1] ?? 'sqlite');
    const settings = { env: { RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: REDIS_URL as string }, database };
    const first = await createTestEnv('sqlite', settings);
    const second = await createTestEnv('sqlite', { ...settings, clock: first.clock });
    try {
      const key = first.brand.apiKey;
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        statuses.push((await first.request('GET', '/api/v1/brand', { key })).status);
        statuses.push((await second.request('GET', '/api/v1/brand', { key })).status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
      const blocked = await second.request('GET', '/api/v1/brand', { key });
      const retryAfter = Number(blocked.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    } finally {
      await first.close();
      await second.close();
      await first.ctx.db.close();
      await database.drop();
    }
  });

  it('refuses a burst at the end of what was a fixed window, with the same counts and headers as in memory', async () => {
    const database = await createTestDatabase(DIALECTS[DIALECTS.length - 1] ?? 'sqlite');
    const settings = { env: { RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: REDIS_URL as string }, database };
    const first = await createTestEnv('sqlite', settings);
    const second = await createTestEnv('sqlite', { ...settings, clock: first.clock });
    try {
      const key = first.brand.apiKey;
      const get = (env: TestEnv) => env.request('GET', '/api/v1/brand', { key });
      first.clock.set(Math.ceil(first.clock.now() / 1000) * 1000);
      assert.equal((await get(first)).status, 200);
      first.clock.advance(57_000);
      for (let i = 0; i < 3; i++) assert.equal((await get(i % 2 ? first : second)).status, 200);
      first.clock.advance(3_500);
      const after = [];
      for (let i = 0; i < 4; i++) after.push(await get(i % 2 ? first : second));
      assert.deepEqual(
        after.map((r) => r.status),
        [200, 429, 429, 429],
        'only the first request stopped counting',
      );
      assert.equal(after[0]?.headers['ratelimit-remaining'], '0');
      assert.equal(after[0]?.headers['ratelimit-reset'], '57');
      assert.equal(after[1]?.headers['retry-after'], '57');
      first.clock.advance(56_000);
      assert.equal((await get(second)).status, 429);
      first.clock.advance(1_000);
      const freed = await get(second);
      assert.equal(freed.status, 200);
      assert.equal(freed.headers['ratelimit-remaining'], '2', 'the 3 of 57 s stopped counting; 60.5 s still counts');
    } finally {
      await first.close();
      await second.close();
      await first.ctx.db.close();
      await database.drop();
    }
  });

  it('keeps two deployments sharing one Redis apart: per-IP limits of one do not refuse the other', async () => {
    const settings = { env: { APPLY_RATE_LIMIT_PER_MINUTE: '1', REDIS_URL: REDIS_URL as string } };
    const staging = await createTestEnv('sqlite', settings);
    const production = await createTestEnv('sqlite', settings);
    try {
      const apply = (env: typeof staging, n: number) =>
        env.request('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: env.brand.slug, name: `Applicant ${n}`, email: `applicant${n}@example.com` },
        });
      assert.equal((await apply(staging, 1)).status, 201);
      assert.equal((await apply(staging, 2)).status, 429, "the deployment's own limit holds");
      assert.equal((await apply(production, 3)).status, 201, "another deployment's traffic counts nothing here");
    } finally {
      await staging.close();
      await production.close();
    }
  });
});
