/**
 * Rough edges of the contract, each a rule clients can rely on: CSV exports and `limit`, blank
 * names, `Cache-Control` on API answers, count limits with a path, and what the application
 * form's documented 409 means.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

for (const dialect of testedDialects()) {
  describe(`API contract edges (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: { APPLY_RATE_LIMIT_PER_MINUTE: '1000' } });
      offerId = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'Edges', destinationUrl: 'https://shop.example/', payoutCents: 100 },
        })
      ).body.id;
      partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'Edges', email: 'e@example.com' } }))
        .body.id;
    });
    after(() => env.close());

    describe('CSV exports of lists', () => {
      it('refuses limit with CSV (it would be ignored) and starts the export after a cursor', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 3; i += 1) {
          env.clock.advance(1000);
          ids.push((await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } })).body.id);
        }
        for (const [path, headers] of [
          ['/api/v1/conversions?format=csv&limit=1', {}],
          ['/api/v1/clicks?format=csv&limit=1', {}],
          ['/api/v1/conversions?limit=1', { accept: 'text/csv' }],
        ] as const) {
          const error = expectError(await env.request('GET', path, { headers }), 422, 'validation_error');
          assert.deepEqual(
            error.details,
            [{ path: 'query.limit', message: 'CSV exports are not paginated: every matching row is streamed' }],
            path,
          );
        }
        const res = await env.app.inject({
          url: `/api/v1/conversions?format=csv&cursor=${ids[2]}`,
          headers: { authorization: `Bearer ${env.brand.apiKey}` },
        });
        assert.equal(res.statusCode, 200);
        const rows = res.body.trim().split('\r\n').slice(1);
        assert.deepEqual(
          rows.map((line) => line.split(',')[0]),
          [ids[1], ids[0]],
          'the rows after the cursor, newest first',
        );
        const json = await env.request('GET', '/api/v1/conversions?limit=1');
        assert.equal(json.status, 200, 'limit is still a JSON page size');
        const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
        assert.match(doc.paths['/api/v1/conversions'].get.description, /`limit` is 422/);
        assert.match(doc.paths['/api/v1/clicks'].get.description, /export starts after that item/);
      });
    });

    describe('names', () => {
      it('refuses a name of white space only, as it refuses an empty one', async () => {
        for (const name of [' ', '\t \n', '']) {
          const created = await env.request('POST', '/api/v1/partners', { body: { name, email: 'b@example.com' } });
          assert.deepEqual(expectError(created, 422, 'validation_error').details, [
            { path: 'name', message: 'must not be blank' },
          ]);
          const brand = await env.request('PATCH', '/api/v1/brand', { body: { name } });
          assert.deepEqual(expectError(brand, 422, 'validation_error').details, [
            { path: 'name', message: 'must not be blank' },
          ]);
          const offer = await env.request('POST', '/api/v1/offers', {
            body: { name, destinationUrl: 'https://shop.example/' },
          });
          assert.deepEqual(expectError(offer, 422, 'validation_error').details, [
            { path: 'name', message: 'must not be blank' },
          ]);
          const applied = await env.request('POST', '/api/public/partners/apply', {
            key: null,
            body: { brandSlug: env.brand.slug, name, email: 'blank@example.com' },
          });
          assert.deepEqual(expectError(applied, 422, 'validation_error').details, [
            { path: 'name', message: 'must not be blank' },
          ]);
        }
        const padded = await env.request('POST', '/api/v1/partners', {
          body: { name: ' Ann ', email: 'a@example.com' },
        });
        assert.equal(padded.status, 201, 'a name with text around spaces is fine');
        const offer = await env.request('POST', '/api/v1/offers', {
          body: { name: 'Summer', destinationUrl: 'https://shop.example/' },
        });
        assert.equal(offer.status, 201);
        const renamed = await env.request('PATCH', `/api/v1/offers/${offer.body.id}`, { body: { name: ' ' } });
        assert.deepEqual(expectError(renamed, 422, 'validation_error').details, [
          { path: 'name', message: 'must not be blank' },
        ]);
      });
    });

    describe('Cache-Control', () => {
      it('sends no-store on every answer under /api/, errors included, and documents it', async () => {
        for (const [path, key] of [
          ['/api/v1/offers', undefined],
          [`/api/v1/offers/${offerId}/postback-token`, undefined],
          ['/api/v1/offers', null],
          ['/api/v1/no-such-route', undefined],
          ['/api/v1/conversions?offerId=nope', undefined],
          ['/api/public/webhook-events', null],
          ['/api/v1/partner/report', undefined],
        ] as const) {
          const res = await env.request('GET', path, key === null ? { key: null } : {});
          assert.equal(res.headers['cache-control'], 'no-store', `${path} → ${res.status}`);
        }
        const health = await env.app.inject({ url: '/health' });
        assert.equal(health.headers['cache-control'], undefined, 'not the probes outside /api/');
        const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
        assert.equal(doc.components.headers.CacheControl.schema.const, 'no-store');
        assert.deepEqual(doc.paths['/api/v1/offers'].get.responses['200'].headers['Cache-Control'], {
          $ref: '#/components/headers/CacheControl',
        });
        assert.equal(doc.paths['/postback'].get.responses['200'].headers['Cache-Control'], undefined);
      });
    });

    describe('count limits', () => {
      it('names the full collection in the 422 of one postback too many, and documents the three limits', async () => {
        for (let i = 0; i < 20; i += 1) {
          const res = await env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, {
            body: { url: `https://partner.example/pb/${i}`, events: ['conversion.created'] },
          });
          assert.equal(res.status, 201, JSON.stringify(res.body));
        }
        const full = await env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, {
          body: { url: 'https://partner.example/pb/21', events: ['conversion.created'] },
        });
        assert.deepEqual(expectError(full, 422, 'validation_error').details, [
          { path: 'postbacks', message: 'a partner can have at most 20 postbacks' },
        ]);
        const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
        assert.match(doc.paths['/api/v1/partners/{id}/postbacks'].post.description, /at most 20 postbacks/);
        assert.match(doc.paths['/api/public/webhooks'].post.description, /at most 50 subscriptions/);
        assert.match(doc.paths['/api/v1/fraud/blocklist'].post.description, /at most 10,000 entries/);
      });

      it('names the full collection in the 422 of one subscription too many', async () => {
        const brand = await env.createBrand('Many hooks');
        const subscribe = (i: number) =>
          env.request('POST', '/api/public/webhooks', {
            key: brand.apiKey,
            body: { url: `http://127.0.0.1:9/hook/${i}`, events: ['conversion.created'] },
          });
        for (let i = 0; i < 50; i += 1) assert.equal((await subscribe(i)).status, 201);
        assert.deepEqual(expectError(await subscribe(50), 422, 'validation_error').details, [
          { path: 'webhooks', message: 'a brand can have at most 50 subscriptions' },
        ]);
      });
    });

    describe('the application form', () => {
      it('takes a repeated e-mail as another applicant, and documents its 409 as idempotency_key_in_use only', async () => {
        const apply = (email: string) =>
          env.request('POST', '/api/public/partners/apply', {
            key: null,
            body: { brandSlug: env.brand.slug, name: 'Twice', email },
          });
        const first = await apply('twice@example.com');
        const second = await apply('TWICE@example.com');
        assert.deepEqual([first.status, second.status], [201, 201]);
        assert.notEqual(first.body.id, second.body.id);
        const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
        const operation = doc.paths['/api/public/partners/apply'].post;
        assert.match(operation.responses['409'].description, /^idempotency_key_in_use/);
        assert.match(operation.description, /also one repeating an e-mail address/);
        // A route whose own rules conflict keeps the general description.
        assert.match(doc.paths['/api/v1/partners/{id}/approve'].post.responses['409'].description, /^conflict/);
      });
    });
  });
}
