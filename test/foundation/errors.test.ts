import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

for (const dialect of testedDialects()) {
  describe(`HTTP errors and authentication (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { BODY_LIMIT_BYTES: '2048' } });
      env.app.get('/api/v1/test-explode', async () => {
        throw new Error('database password is hunter2');
      });
    });
    after(() => env.close());

    it('returns the caller brand for a valid key', async () => {
      const res = await env.request('GET', '/api/v1/brand');
      assert.equal(res.status, 200);
      assert.equal(res.body.id, env.brand.id);
      assert.equal(res.body.timezone, 'UTC');
      assert.match(res.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it('answers 401 without an Authorization header', async () => {
      expectError(await env.request('GET', '/api/v1/brand', { key: null }), 401, 'unauthorized');
    });

    it('answers 401 for a scheme other than Bearer', async () => {
      const res = await env.request('GET', '/api/v1/brand', {
        key: null,
        headers: { authorization: `Basic ${env.brand.apiKey}` },
      });
      expectError(res, 401, 'unauthorized');
    });

    it('answers 401 for a malformed Bearer header', async () => {
      for (const header of ['Bearer', 'Bearer ', `Bearer ${env.brand.apiKey} extra`]) {
        const res = await env.request('GET', '/api/v1/brand', { key: null, headers: { authorization: header } });
        expectError(res, 401, 'unauthorized');
      }
    });

    it('accepts the scheme name in any case', async () => {
      const res = await env.request('GET', '/api/v1/brand', {
        key: null,
        headers: { authorization: `bearer ${env.brand.apiKey}` },
      });
      assert.equal(res.status, 200);
    });

    it('answers 401 for an unknown key', async () => {
      expectError(await env.request('GET', '/api/v1/brand', { key: 'afk_doesnotexist' }), 401, 'unauthorized');
      expectError(await env.request('GET', '/api/v1/brand', { key: 'not-even-our-format' }), 401, 'unauthorized');
    });

    it('answers 401 for a revoked key', async () => {
      const other = await env.createBrand('Revoked Co');
      assert.equal((await env.request('GET', '/api/v1/brand', { key: other.apiKey })).status, 200);
      const { revokeApiKey } = await import('../../src/modules/apiKeys/service.js');
      await revokeApiKey(env.ctx.db, env.clock, other.keyId);
      expectError(await env.request('GET', '/api/v1/brand', { key: other.apiKey }), 401, 'unauthorized');
    });

    it("shows another brand's key only that brand", async () => {
      const other = await env.createBrand('Other Co');
      const res = await env.request('GET', '/api/v1/brand', { key: other.apiKey });
      assert.equal(res.body.id, other.id);
      assert.notEqual(res.body.id, env.brand.id);
    });

    it('answers 404 in the error shape for unknown routes', async () => {
      expectError(await env.request('GET', '/api/v1/nope'), 404, 'not_found');
      expectError(await env.request('GET', '/nope', { key: null }), 404, 'not_found');
    });

    it('answers 400 invalid_json for an unparsable body', async () => {
      const res = await env.app.inject({
        method: 'PATCH',
        url: '/api/v1/brand',
        headers: { authorization: `Bearer ${env.brand.apiKey}`, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expectError({ status: res.statusCode, body: res.json() }, 400, 'invalid_json');
    });

    it('answers 413 payload_too_large above the body limit', async () => {
      const res = await env.request('PATCH', '/api/v1/brand', { body: { name: 'x'.repeat(5000) } });
      expectError(res, 413, 'payload_too_large');
    });

    it('answers 422 listing every problem, with no type coercion and no unknown fields', async () => {
      const res = await env.request('PATCH', '/api/v1/brand', {
        body: { fraudThreshold: '80', name: 123, colour: 'red' },
      });
      const error = expectError(res, 422, 'validation_error');
      const paths = (error.details ?? []).map((d) => d.path).sort();
      assert.deepEqual(paths, ['colour', 'fraudThreshold', 'name']);
      assert.match(error.message, /fraudThreshold/);
    });

    it('answers 422 for an unknown time zone or currency', async () => {
      const res = await env.request('PATCH', '/api/v1/brand', { body: { timezone: 'Mars/Olympus', currency: 'XYZ' } });
      const error = expectError(res, 422, 'validation_error');
      assert.deepEqual(error.details?.map((d) => d.path).sort(), ['currency', 'timezone']);
    });

    it('answers 500 internal_error without leaking internals, and logs the cause', async () => {
      const res = await env.request('GET', '/api/v1/test-explode');
      const error = expectError(res, 500, 'internal_error');
      assert.doesNotMatch(JSON.stringify(res.body), /hunter2|Error:|at /);
      assert.ok(
        env.logs.some((line) => line.includes('hunter2')),
        'the cause is logged for operators',
      );
      assert.doesNotMatch(error.message, /hunter2/);
    });

    it('updates brand settings with PATCH /brand', async () => {
      const res = await env.request('PATCH', '/api/v1/brand', {
        body: { timezone: 'Europe/Berlin', fraudThreshold: 60, autoBan: { highRiskClicks: 5, windowMinutes: 10 } },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.timezone, 'Europe/Berlin');
      assert.equal(res.body.fraudThreshold, 60);
      assert.deepEqual(res.body.autoBan, { highRiskClicks: 5, windowMinutes: 10 });
    });

    it('echoes a request id and never logs the API key', async () => {
      const res = await env.request('GET', '/api/v1/brand', { headers: { 'x-request-id': 'req-abc-123' } });
      assert.equal(res.headers['x-request-id'], 'req-abc-123');
      const all = env.logs.join('\n');
      assert.ok(all.includes('req-abc-123'));
      assert.ok(!all.includes(env.brand.apiKey), 'API key must not be logged');
    });
  });
}
