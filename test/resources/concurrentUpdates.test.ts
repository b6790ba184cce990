/**
 * Updates that read a row, decide and write it back, run concurrently on one resource: a
 * metadata merge keeps every key and the 50-key limit, a secret rotation keeps the secrets it
 * handed out, an approval never undoes a ban (PostgreSQL locks the row before reading it;
 * SQLite's writes are serial anyway).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const PARALLEL = 20;

for (const dialect of testedDialects()) {
  describe(`concurrent read-modify-write updates (${dialect})`, () => {
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

    it('keeps both secrets of two concurrent rotations: one current, the other previous', async () => {
      const path = await resources.subscription();
      const rotations = await Promise.all(
        [0, 1].map(() => env.request('POST', `${path}/rotate-secret`, { body: { previousSecretExpiresIn: 3600 } })),
      );
      assert.deepEqual(
        rotations.map((r) => r.status),
        [200, 200],
        JSON.stringify(rotations.map((r) => r.body)),
      );
      const id = path.split('/').at(-1) as string;
      const row = await env.ctx.db.read
        .selectFrom('webhook_subscriptions')
        .select(['secret', 'previous_secret'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      for (const rotation of rotations) {
        assert.ok([row.secret, row.previous_secret].includes(rotation.body.secret), 'a secret handed out still signs');
      }
    });

    it('never leaves a partner active whose ban was answered 200, however approval and ban interleave', async () => {
      for (let round = 0; round < 8; round++) {
        const applied = await env.request('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: env.brand.slug, name: `Applicant ${round}`, email: `a${round}@example.com` },
        });
        assert.equal(applied.status, 201, JSON.stringify(applied.body));
        const partner = `/api/v1/partners/${applied.body.id}`;
        const [approve, ban] = await Promise.all([
          env.request('POST', `${partner}/approve`),
          env.request('POST', `${partner}/ban`),
        ]);
        assert.equal(ban.status, 200, JSON.stringify(ban.body));
        assert.ok([200, 409].includes(approve.status), JSON.stringify(approve.body));
        assert.equal((await env.request('GET', partner)).body.status, 'banned', `round ${round}`);
      }
    });

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
