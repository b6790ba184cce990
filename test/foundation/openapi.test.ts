import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv } from '../helpers.js';

describe('OpenAPI, docs and health', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite');
  });
  after(() => env.close());

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await env.request('GET', '/api/v1/openapi.json', { key: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const brand = res.body.paths['/api/v1/brand'];
    assert.ok(brand.get.responses['200'], 'GET /brand documented');
    assert.ok(brand.patch.requestBody, 'PATCH /brand body documented');
    assert.ok(res.body.components.securitySchemes.bearerAuth);
  });

  it('serves readable docs at /docs', async () => {
    const res = await env.app.inject({ url: '/docs/' });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /swagger/i);
  });

  it('answers /health and /ready', async () => {
    assert.deepEqual((await env.request('GET', '/health', { key: null })).body, { status: 'ok' });
    const ready = await env.request('GET', '/ready', { key: null });
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
  });
});
