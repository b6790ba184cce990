import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { revokeApiKey } from '../../src/modules/apiKeys/service.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { ALL_EVENTS, type SubscriptionView, subscribe } from './harness.js';

const HOOKS = '/api/public/webhooks';
const SECRET = 'whsec_never_shown_123';
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for (const dialect of testedDialects()) {
  describe(`webhook subscriptions (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    const assertNoSecret = (body: unknown) =>
      assert.ok(!JSON.stringify(body).includes(SECRET), `secret leaked: ${JSON.stringify(body)}`);

    describe('POST /api/public/webhooks', () => {
      it('answers 201 with id, url, events, hasSecret, status and createdAt, and never the secret', async () => {
        const res = await env.request('POST', HOOKS, {
          body: {
            url: 'https://hooks.example/affitrack',
            events: ['conversion.created', 'cap.reached'],
            secret: SECRET,
          },
        });
        assert.equal(res.status, 201);
        assert.match(res.body.id, /^sub_[0-9A-Z]{26}$/);
        assert.deepEqual(res.body, {
          id: res.body.id,
          url: 'https://hooks.example/affitrack',
          events: ['conversion.created', 'cap.reached'],
          hasSecret: true,
          status: 'active',
          disabledAt: null,
          disabledReason: null,
          rateLimitPerSecond: null,
          previousSecretExpiresAt: null,
          health: {
            successRate24h: null,
            attempts24h: 0,
            consecutiveFailures: 0,
            failingSince: null,
            lastSuccessAt: null,
            lastFailureAt: null,
            disableProgressPercent: 0,
            warning: null,
            parkedDeliveries: 0,
          },
          metadata: {},
          createdAt: new Date(env.clock.now()).toISOString(),
        });
        assert.match(res.body.createdAt, ISO_MS);
        assertNoSecret(res.body);
      });

      it('reports hasSecret false when no secret is given', async () => {
        const sub = await subscribe(env, { url: 'https://hooks.example/plain' });
        assert.equal(sub.hasSecret, false);
      });

      it('accepts every event name of the catalogue at once', async () => {
        const sub = await subscribe(env, { url: 'https://hooks.example/all', events: ALL_EVENTS });
        assert.deepEqual(sub.events, ALL_EVENTS);
      });

      const invalid: Array<[string, Record<string, unknown>, string]> = [
        ['a relative URL', { url: '/hooks', events: ['cap.reached'] }, 'url'],
        ['an ftp URL', { url: 'ftp://hooks.example/x', events: ['cap.reached'] }, 'url'],
        // The URL parser would drop the line break: the log would show a URL other than the one called.
        [
          'a URL with a line break',
          { url: 'https://hooks.example/wh\r\nX-Injected: 1', events: ['cap.reached'] },
          'url',
        ],
        // Credentials in the URL would be shown back in every answer, and are not sent.
        ['a URL with a password', { url: 'https://user:p%40ss@hooks.example/', events: ['cap.reached'] }, 'url'],
        ['a URL with a user name', { url: 'https://user@hooks.example/', events: ['cap.reached'] }, 'url'],
        ['an empty events list', { url: 'https://hooks.example/', events: [] }, 'events'],
        ['an unknown event name', { url: 'https://hooks.example/', events: ['conversion.deleted'] }, 'events'],
        ['duplicate events', { url: 'https://hooks.example/', events: ['cap.reached', 'cap.reached'] }, 'events'],
        ['an unknown field', { url: 'https://hooks.example/', events: ['cap.reached'], colour: 'red' }, 'colour'],
        ['a missing url', { events: ['cap.reached'] }, 'url'],
        [
          'a secret that is not a string',
          { url: 'https://hooks.example/', events: ['cap.reached'], secret: 42 },
          'secret',
        ],
      ];
      for (const [what, body, path] of invalid) {
        it(`answers 422 naming ${path} for ${what}`, async () => {
          const error = expectError(await env.request('POST', HOOKS, { body }), 422, 'validation_error');
          assert.ok(
            error.details?.some(
              (d) => d.path === path || d.path.startsWith(`${path}/`) || d.path.startsWith(`${path}.`),
            ),
            JSON.stringify(error),
          );
        });
      }

      it('refuses a URL the parser would dial differently from how it is written (spaces, http:/host, http:///host, backslashes, dot segments) with 422, on create and PATCH', async () => {
        const sloppy = [
          ' https://hooks.example/sp',
          'https://hooks.example/sp ',
          'https:/hooks.example/sl',
          'https:hooks.example/nc',
          'https:\\\\hooks.example\\bs',
          'https://hooks.example\\bs',
          'https://hooks.example/a b',
          'https:///hooks.example/triple',
          'https:////hooks.example/quad',
          'https://hooks.example/ok/../dots',
          'https://hooks.example/ok/%2E%2e/dots',
          'https://hooks.example/./dot',
          'https://hooks.example/ok/..',
        ];
        for (const url of sloppy) {
          const error = expectError(
            await env.request('POST', HOOKS, { body: { url, events: ['cap.reached'] } }),
            422,
            'validation_error',
          );
          assert.equal(error.details?.[0]?.path, 'url', JSON.stringify(url));
        }
        const dotted = await env.request('POST', HOOKS, {
          body: { url: 'https://hooks.example/v1.2/..hooks/a.b?next=../x', events: ['cap.reached'] },
        });
        assert.equal(
          dotted.status,
          201,
          'dots that are not whole path segments, and any in the query, are sent as written',
        );
        await env.request('DELETE', `${HOOKS}/${dotted.body.id}`);
        const kept = await env.request('POST', HOOKS, {
          body: { url: 'https://hooks.example/ok?next=a\\b', events: ['cap.reached'] },
        });
        assert.equal(kept.status, 201, 'a backslash in the query is sent as it is');
        assert.equal(kept.body.url, 'https://hooks.example/ok?next=a\\b');
        for (const url of sloppy) {
          const res = await env.request('PATCH', `${HOOKS}/${kept.body.id}`, { body: { url } });
          assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'url', JSON.stringify(url));
        }
        assert.equal(
          (await env.request('GET', `${HOOKS}/${kept.body.id}`)).body.url,
          'https://hooks.example/ok?next=a\\b',
        );
        await env.request('DELETE', `${HOOKS}/${kept.body.id}`);
      });

      it('stores exactly 50 subscriptions when 80 are created at once, answering 422 to the other 30', async () => {
        const brand = await env.createBrand('Concurrent subscriber');
        const responses = await Promise.all(
          Array.from({ length: 80 }, (_, i) =>
            env.request('POST', HOOKS, {
              body: { url: `https://hooks.example.com/${i}`, events: ['partner.approved'] },
              key: brand.apiKey,
            }),
          ),
        );
        const statuses = responses.map((r) => r.status);
        assert.equal(statuses.filter((s) => s === 201).length, 50, JSON.stringify(statuses));
        assert.equal(statuses.filter((s) => s === 422).length, 30, JSON.stringify(statuses));
        const stored = await env.ctx.db.read
          .selectFrom('webhook_subscriptions')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('brand_id', '=', brand.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(stored.n), 50);
      });

      it('answers 401 without an API key', async () => {
        const body = { url: 'https://hooks.example/', events: ['cap.reached'] };
        expectError(await env.request('POST', HOOKS, { body, key: null }), 401, 'unauthorized');
      });

      it('answers 401 with a revoked API key on every webhook route', async () => {
        const other = await env.createBrand('Revoked Hooks');
        const sub = await subscribe(env, { url: 'https://hooks.example/revoked' }, other.apiKey);
        await revokeApiKey(env.ctx.db, env.clock, other.keyId);
        const key = other.apiKey;
        const body = { url: 'https://hooks.example/', events: ['cap.reached'] };
        expectError(await env.request('POST', HOOKS, { body, key }), 401, 'unauthorized');
        expectError(await env.request('GET', HOOKS, { key }), 401, 'unauthorized');
        expectError(await env.request('GET', `${HOOKS}/${sub.id}`, { key }), 401, 'unauthorized');
        expectError(await env.request('DELETE', `${HOOKS}/${sub.id}`, { key }), 401, 'unauthorized');
      });
    });

    describe('reading, changing and deleting subscriptions', () => {
      let brandKey: string;
      const created: SubscriptionView[] = [];
      before(async () => {
        brandKey = (await env.createBrand('Listing Brand')).apiKey;
        for (const n of [1, 2, 3]) {
          env.clock.advance(1);
          created.push(await subscribe(env, { url: `https://hooks.example/${n}`, secret: SECRET }, brandKey));
        }
      });

      it('lists the brand’s subscriptions newest first without secrets', async () => {
        const res = await env.request('GET', HOOKS, { key: brandKey });
        assert.equal(res.status, 200);
        assert.deepEqual(
          res.body.data.map((s: SubscriptionView) => s.id),
          created.map((s) => s.id).reverse(),
        );
        assert.equal(res.body.nextCursor, null);
        assert.deepEqual(res.body.data[2], created[0]);
        assertNoSecret(res.body);
      });

      it('pages the list with limit and cursor', async () => {
        const first = await env.request('GET', `${HOOKS}?limit=2`, { key: brandKey });
        assert.deepEqual(
          first.body.data.map((s: SubscriptionView) => s.id),
          [created[2]?.id, created[1]?.id],
        );
        assert.equal(first.body.nextCursor, created[1]?.id);
        const second = await env.request('GET', `${HOOKS}?limit=2&cursor=${first.body.nextCursor}`, { key: brandKey });
        assert.deepEqual(
          second.body.data.map((s: SubscriptionView) => s.id),
          [created[0]?.id],
        );
        assert.equal(second.body.nextCursor, null);
        expectError(await env.request('GET', `${HOOKS}?limit=0`, { key: brandKey }), 422, 'validation_error');
        expectError(await env.request('GET', `${HOOKS}?limit=101`, { key: brandKey }), 422, 'validation_error');
      });

      it('returns one subscription bare, without the secret', async () => {
        const res = await env.request('GET', `${HOOKS}/${created[0]?.id}`, { key: brandKey });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, created[0]);
        assertNoSecret(res.body);
      });

      it('changes events and url with PATCH, keeping the rest and never echoing the secret', async () => {
        const id = created[0]?.id;
        const res = await env.request('PATCH', `${HOOKS}/${id}`, {
          key: brandKey,
          body: { events: ['partner.banned', 'fraud.high_risk'], url: 'https://hooks.example/moved' },
        });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, {
          ...created[0],
          events: ['partner.banned', 'fraud.high_risk'],
          url: 'https://hooks.example/moved',
        });
        assertNoSecret(res.body);
        assert.deepEqual((await env.request('GET', `${HOOKS}/${id}`, { key: brandKey })).body, res.body);
      });

      it('replaces the secret without showing it, and removes it with secret null', async () => {
        const id = created[1]?.id;
        const replaced = await env.request('PATCH', `${HOOKS}/${id}`, {
          key: brandKey,
          body: { secret: 'whsec_replacement_456' },
        });
        assert.equal(replaced.body.hasSecret, true);
        assert.ok(!JSON.stringify(replaced.body).includes('whsec_replacement_456'));
        const removed = await env.request('PATCH', `${HOOKS}/${id}`, { key: brandKey, body: { secret: null } });
        assert.equal(removed.status, 200);
        assert.equal(removed.body.hasSecret, false);
        assert.equal((await env.request('GET', `${HOOKS}/${id}`, { key: brandKey })).body.hasSecret, false);
      });

      it('disables and re-enables a subscription with PATCH status', async () => {
        const id = created[2]?.id;
        const disabled = await env.request('PATCH', `${HOOKS}/${id}`, { key: brandKey, body: { status: 'disabled' } });
        assert.equal(disabled.body.status, 'disabled');
        assert.equal((await env.request('GET', `${HOOKS}/${id}`, { key: brandKey })).body.status, 'disabled');
        const enabled = await env.request('PATCH', `${HOOKS}/${id}`, { key: brandKey, body: { status: 'active' } });
        assert.equal(enabled.body.status, 'active');
      });

      it('answers 422 to a PATCH with an invalid value or an unknown field', async () => {
        const id = created[2]?.id;
        for (const body of [{ url: 'ftp://x.example/' }, { events: [] }, { status: 'paused' }, { id: 'sub_x' }]) {
          expectError(await env.request('PATCH', `${HOOKS}/${id}`, { key: brandKey, body }), 422, 'validation_error');
        }
      });

      it('deletes with 204, after which the subscription is 404 everywhere', async () => {
        const sub = await subscribe(env, { url: 'https://hooks.example/doomed' }, brandKey);
        const res = await env.request('DELETE', `${HOOKS}/${sub.id}`, { key: brandKey });
        assert.equal(res.status, 204);
        assert.equal(res.body, '');
        expectError(await env.request('GET', `${HOOKS}/${sub.id}`, { key: brandKey }), 404, 'not_found');
        expectError(await env.request('DELETE', `${HOOKS}/${sub.id}`, { key: brandKey }), 404, 'not_found');
        expectError(
          await env.request('PATCH', `${HOOKS}/${sub.id}`, { key: brandKey, body: { status: 'active' } }),
          404,
          'not_found',
        );
        const listed = await env.request('GET', HOOKS, { key: brandKey });
        assert.ok(!listed.body.data.some((s: SubscriptionView) => s.id === sub.id));
      });

      it("answers 404 for another brand's subscription on GET, PATCH, DELETE and deliveries", async () => {
        const id = created[0]?.id;
        expectError(await env.request('GET', `${HOOKS}/${id}`), 404, 'not_found');
        expectError(await env.request('PATCH', `${HOOKS}/${id}`, { body: { status: 'disabled' } }), 404, 'not_found');
        expectError(await env.request('DELETE', `${HOOKS}/${id}`), 404, 'not_found');
        expectError(await env.request('GET', `${HOOKS}/${id}/deliveries`), 404, 'not_found');
        const mine = await env.request('GET', `${HOOKS}/${id}`, { key: brandKey });
        assert.equal(mine.body.status, 'active', 'the owner’s subscription is untouched');
        const listed = await env.request('GET', HOOKS);
        assert.ok(!listed.body.data.some((s: SubscriptionView) => s.id === id));
      });

      it('never writes a secret to the log', () => {
        const logs = env.logs.join('\n');
        assert.ok(logs.length > 0);
        for (const secret of [SECRET, 'whsec_replacement_456']) assert.ok(!logs.includes(secret), secret);
      });

      it('answers 404 for an unknown subscription id', async () => {
        expectError(await env.request('GET', `${HOOKS}/sub_00000000000000000000000000`), 404, 'not_found');
      });
    });
  });

  describe(`webhook routes under the rate limit (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '3' } });
    });
    after(() => env.close());

    it('answers the 4th call within a minute with 429, Retry-After and RateLimit headers', async () => {
      const calls = [
        () => env.request('POST', HOOKS, { body: { url: 'https://hooks.example/', events: ['cap.reached'] } }),
        () => env.request('GET', HOOKS),
        () => env.request('GET', '/api/public/webhook-deliveries'),
      ];
      for (const [index, call] of calls.entries()) {
        const res = await call();
        assert.ok(res.status < 300, `call ${index + 1}: ${res.status}`);
        assert.equal(res.headers['ratelimit-limit'], '3');
        assert.equal(res.headers['ratelimit-remaining'], String(2 - index));
        assert.equal(res.headers['ratelimit-reset'], '60');
      }
      env.clock.advance(15_000);
      const blocked = await env.request('GET', HOOKS);
      expectError(blocked, 429, 'rate_limit_exceeded');
      assert.equal(blocked.headers['retry-after'], '45');
      assert.equal(blocked.headers['ratelimit-limit'], '3');
      assert.equal(blocked.headers['ratelimit-remaining'], '0');
      assert.equal(blocked.headers['ratelimit-reset'], '45');
    });

    it('does not count the public event catalogue, which takes no key', async () => {
      for (let i = 0; i < 5; i++) {
        const res = await env.request('GET', '/api/public/webhook-events', { key: null });
        assert.equal(res.status, 200);
        assert.equal(res.headers['ratelimit-limit'], undefined);
      }
    });
  });
}
