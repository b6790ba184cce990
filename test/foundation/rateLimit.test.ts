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

    it('counts requests to paths and methods that match no route: 404 with RateLimit headers, then 429', async () => {
      const key = await freshKey();
      const unrouted: Array<[string, string]> = [
        ['GET', '/api/v1/nothing'],
        ['DELETE', '/api/v1/offers'],
        ['GET', '/api/public/nothing'],
        ['GET', '/api/v1/partner/nothing'],
      ];
      for (const [i, [method, path]] of unrouted.entries()) {
        const res = await env.request(method, path, { key });
        expectError(res, 404, 'not_found');
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
