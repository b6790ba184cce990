/**
 * PATCH merges metadata into what is stored. Concurrent merges on one resource each keep
 * their keys, and the 50-key limit holds under the race (PostgreSQL locks the row before
 * reading it; SQLite's writes are serial anyway).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const PARALLEL = 20;

for (const dialect of testedDialects()) {
  describe(`concurrent metadata merges (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    });
    after(() => env.close());

    const created = async (path: string, body: Record<string, unknown>) => {
      const res = await env.request('POST', path, { body });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id as string;
    };
    const resources = {
      offer: async () =>
        `/api/v1/offers/${await created('/api/v1/offers', { name: 'O', destinationUrl: 'https://shop.example/' })}`,
      partner: async () =>
        `/api/v1/partners/${await created('/api/v1/partners', { name: 'P', email: 'p@example.com' })}`,
      subscription: async () =>
        `/api/public/webhooks/${await created('/api/public/webhooks', { url: 'https://hooks.example/', events: ['cap.reached'] })}`,
    };

    for (const [name, create] of Object.entries(resources)) {
      it(`keeps every key of ${PARALLEL} concurrent PATCHes of one ${name}`, async () => {
        const path = await create();
        const answers = await Promise.all(
          Array.from({ length: PARALLEL }, (_, i) =>
            env.request('PATCH', path, { body: { metadata: { [`k${i}`]: String(i) } } }),
          ),
        );
        assert.deepEqual(
          answers.map((a) => a.status),
          Array(PARALLEL).fill(200),
        );
        const stored = (await env.request('GET', path)).body.metadata as Record<string, string>;
        assert.deepEqual(Object.keys(stored).sort(), Array.from({ length: PARALLEL }, (_, i) => `k${i}`).sort());
      });
    }

    it('enforces the 50-key limit under concurrent PATCHes', async () => {
      const path = await resources.offer();
      const first = Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`base${i}`, 'x']));
      assert.equal((await env.request('PATCH', path, { body: { metadata: first } })).status, 200);
      const answers = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          env.request('PATCH', path, { body: { metadata: { [`k${i}`]: 'y' } } }),
        ),
      );
      const statuses = answers.map((a) => a.status);
      assert.equal(statuses.filter((s) => s === 200).length, 5, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 422).length, PARALLEL - 5, JSON.stringify(statuses));
      const stored = (await env.request('GET', path)).body.metadata as Record<string, string>;
      assert.equal(Object.keys(stored).length, 50);
    });
  });
}
