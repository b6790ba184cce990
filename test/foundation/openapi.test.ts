import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createTestEnv, type JsonBody, type TestEnv } from '../helpers.js';

interface Operation {
  responses?: Record<string, unknown>;
  parameters?: Array<{ in: string; name: string }>;
  security?: unknown;
}

/** Documented paths anyone may call, without an API key. */
const PUBLIC_PATHS = new Set([
  '/health',
  '/ready',
  '/t/{offerId}/{partnerId}',
  '/postback',
  '/api/public/partners/apply',
  '/api/public/webhook-events',
]);

/**
 * Every route of the app as method and path, read from Fastify's route tree
 * (`printRoutes({ commonPrefix: false })`: one node per line, four characters per level,
 * each node's text the rest of its parent's path, methods in parentheses).
 */
function registeredRoutes(app: FastifyInstance): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const node = /^([│ ]*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!node) continue;
    const depth = (node[1] ?? '').length / 4;
    const path = (parents[depth - 1] ?? '') + (node[2] ?? '');
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (node[3] ?? '').split(', ').filter(Boolean)) routes.push({ method, path });
  }
  return routes;
}

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

  it('documents every API route, and only routes that exist', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    const documented = new Set<string>();
    for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(operations)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const api = registeredRoutes(env.app).filter(
      (r) => r.path.startsWith('/api/') && r.path !== '/api/v1/openapi.json' && r.method !== 'HEAD',
    );
    assert.ok(api.length >= 30, `found the API routes (${api.length})`);
    const missing = api
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
      .filter((r) => !documented.has(r));
    assert.deepEqual(missing, [], 'every API route is in the OpenAPI document');
    for (const operation of documented) {
      const [method, path] = operation.split(' ') as [string, string];
      const url = path.replace(/\{(\w+)\}/g, ':$1');
      assert.ok(env.app.hasRoute({ method: method as 'GET', url }), `${operation} is a route`);
    }
  });

  it('describes every operation: a success, its errors in the error shape, its parameters and its key', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    const operations = Object.entries<Record<string, Operation>>(doc.paths).flatMap(([path, byMethod]) =>
      Object.entries(byMethod).map(([method, operation]) => ({
        name: `${method.toUpperCase()} ${path}`,
        path,
        operation,
      })),
    );
    assert.ok(operations.length >= 40, `operations found (${operations.length})`);
    for (const { name, path, operation } of operations) {
      const statuses = Object.keys(operation.responses ?? {});
      assert.ok(
        statuses.some((s) => /^[23]\d\d$/.test(s)),
        `${name} documents its success (${statuses.join(', ')})`,
      );
      for (const status of statuses.filter((s) => /^[45]\d\d$/.test(s))) {
        const schema = JSON.stringify(operation.responses?.[status]);
        assert.match(
          schema,
          /"#\/components\/schemas\/Error"|"\$ref":"Error"|"error"/,
          `${name} ${status} uses the error shape`,
        );
      }
      for (const param of path.match(/\{(\w+)\}/g) ?? []) {
        const declared = (operation.parameters ?? []).some((p) => p.in === 'path' && `{${p.name}}` === param);
        assert.ok(declared, `${name} declares its path parameter ${param}`);
      }
      if (!PUBLIC_PATHS.has(path)) {
        // The partner API takes partner keys (afp_), everything else brand keys (afk_).
        const scheme = path.startsWith('/api/v1/partner/') ? 'partnerKey' : 'bearerAuth';
        assert.deepEqual(operation.security, [{ [scheme]: [] }], `${name} needs an API key`);
        assert.ok(statuses.includes('401') && statuses.includes('429'), `${name} documents 401 and 429`);
      }
    }
  });

  it('names every operation and every response schema, closes every object, and says every shape status', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    assert.deepEqual(doc.servers, [{ url: '/', description: 'The server that serves this document.' }]);
    const ids: string[] = [];
    let checked = 0;
    for (const [path, byMethod] of Object.entries<Record<string, JsonBody>>(doc.paths)) {
      for (const [method, operation] of Object.entries<JsonBody>(byMethod)) {
        const name = `${method.toUpperCase()} ${path}`;
        assert.match(String(operation.operationId), /^[a-z][A-Za-z]+$/, `${name} has a camelCase operationId`);
        ids.push(operation.operationId);
        assert.ok(Array.isArray(operation.security), `${name} says which key it takes, or none`);
        const statuses = Object.keys(operation.responses);
        for (const status of ['400', '503', 'default'])
          assert.ok(statuses.includes(status), `${name} documents ${status}`);
        if (method === 'post' && /^\/api\/(v1|public)\//.test(path)) {
          assert.ok(
            operation.parameters?.some((p: JsonBody) => p.in === 'header' && p.name === 'Idempotency-Key'),
            `${name} takes an Idempotency-Key`,
          );
          for (const status of ['409', '413', '415', '422'])
            assert.ok(statuses.includes(status), `${name} documents ${status}`);
        }
        for (const [status, response] of Object.entries<JsonBody>(operation.responses)) {
          const schema = response.content?.['application/json']?.schema;
          if (!schema) continue;
          assert.match(
            String(schema.$ref),
            /^#\/components\/schemas\/[A-Z]\w+$/,
            `${name} ${status} is a named schema`,
          );
          checked += 1;
        }
      }
    }
    assert.ok(checked >= 100, `response schemas checked (${checked})`);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    const open: string[] = [];
    const walk = (schema: JsonBody, where: string) => {
      if (Array.isArray(schema)) {
        for (const [i, item] of schema.entries()) walk(item, `${where}/${i}`);
      }
      if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
      const isObject = schema.type === 'object' || schema.properties;
      const declared = 'additionalProperties' in schema || 'patternProperties' in schema;
      if (isObject && !declared) open.push(where);
      for (const [key, value] of Object.entries(schema)) walk(value, `${where}/${key}`);
    };
    walk(doc.components.schemas, '#/components/schemas');
    assert.deepEqual(open, [], 'every object of every component says whether it takes other fields');
    for (const name of [
      'Offer',
      'OfferList',
      'Conversion',
      'ConversionList',
      'Partner',
      'Error',
      'WebhookSubscription',
    ]) {
      assert.ok(doc.components.schemas[name], `${name} is a component`);
    }
  });

  it('declares the headers every response carries, as components referenced from the responses', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
    for (const name of [
      'RequestId',
      'RateLimitLimit',
      'RateLimitRemaining',
      'RateLimitReset',
      'RetryAfter',
      'IdempotentReplayed',
      'WWWAuthenticate',
    ]) {
      assert.ok(doc.components.headers?.[name]?.schema, `components/headers/${name}`);
    }
    assert.equal(doc.components.headers.WWWAuthenticate.schema.const, 'Bearer realm="affitrack"');
    // Limited without a key: per client address, per postback token.
    const limitedWithoutKey = new Set(['applyAsPartner', 'recordPixelPostback']);
    let replayable = 0;
    for (const [path, byMethod] of Object.entries<Record<string, JsonBody>>(doc.paths)) {
      for (const [method, operation] of Object.entries<JsonBody>(byMethod)) {
        const keyed = operation.security.length > 0;
        const idempotent = operation.parameters?.some((p: JsonBody) => p.name === 'Idempotency-Key');
        for (const [status, response] of Object.entries<JsonBody>(operation.responses)) {
          const name = `${method.toUpperCase()} ${path} ${status}`;
          const headers = response.headers ?? {};
          assert.deepEqual(headers['X-Request-Id'], ref('RequestId'), `${name}: X-Request-Id`);
          const counted =
            ((keyed && status !== '401') || limitedWithoutKey.has(operation.operationId)) && status !== 'default';
          for (const limit of ['Limit', 'Remaining', 'Reset']) {
            assert.deepEqual(headers[`RateLimit-${limit}`], counted ? ref(`RateLimit${limit}`) : undefined, name);
          }
          if (status === '429' || status === '503') assert.deepEqual(headers['Retry-After'], ref('RetryAfter'), name);
          // The Bearer challenge belongs to the 401 of a keyed route; the pixel's token is a query parameter.
          if (status === '401') {
            assert.deepEqual(headers['WWW-Authenticate'], keyed ? ref('WWWAuthenticate') : undefined, name);
          }
          if (idempotent && /^2/.test(status)) {
            assert.deepEqual(headers['Idempotent-Replayed'], ref('IdempotentReplayed'), name);
            replayable += 1;
          }
        }
      }
    }
    assert.ok(replayable >= 20, `POST successes that may be replayed (${replayable})`);
    const pixel = doc.paths['/postback'].get;
    assert.match(pixel.responses['401'].description, /postback token/);
    assert.match(pixel.responses['401'].description, /No WWW-Authenticate/);
    assert.match(pixel.description, /HEAD \/postback` is 404/);
    assert.equal(doc.paths['/postback'].head, undefined);
    for (const [path, method, status] of [
      ['/api/public/partners/apply', 'post', '201'],
      ['/api/public/partners/apply', 'post', '422'],
      ['/postback', 'get', '200'],
    ]) {
      const headers = doc.paths[path as string][method as string].responses[status as string].headers;
      assert.deepEqual(headers['RateLimit-Remaining'], ref('RateLimitRemaining'), `${method} ${path} ${status}`);
      assert.equal(doc.paths[path as string][method as string]['x-affitrack-rate-limited'], undefined);
    }
    assert.deepEqual(
      doc.paths['/t/{offerId}/{partnerId}'].get.responses['302'].headers.Location.schema,
      { type: 'string' },
      "a route's own headers are kept",
    );
  });

  it('marks a request body optional exactly where an empty body is accepted', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    const required = (method: string, path: string) => doc.paths[path][method].requestBody.required;
    for (const [method, path] of [
      ['patch', '/api/v1/brand'],
      ['patch', '/api/v1/offers/{id}'],
      ['post', '/api/v1/partners/{id}/approve'],
      ['post', '/api/v1/conversions/{id}/reject'],
      ['post', '/api/v1/payouts/{id}/mark-paid'],
      ['post', '/api/public/webhooks/{id}/rotate-secret'],
      ['delete', '/api/public/webhooks/{id}'],
    ]) {
      assert.equal(required(method as string, path as string), false, `${method} ${path}`);
      // No body and no Content-Type, as a client sends a bodiless request.
      const res = await env.app.inject({
        method: String(method).toUpperCase() as 'GET',
        url: String(path).replace('{id}', 'nope'),
        headers: { authorization: `Bearer ${env.brand.apiKey}` },
      });
      const expected = String(path).includes('{id}') ? 404 : 200;
      assert.equal(res.statusCode, expected, `${method} ${path} without a body reaches its route: ${res.body}`);
    }
    for (const [method, path] of [
      ['post', '/api/v1/offers'],
      ['post', '/api/v1/conversions'],
      ['post', '/api/v1/clicks/erase'],
      ['post', '/api/public/webhooks/{id}/recover'],
    ]) {
      assert.equal(required(method as string, path as string), true, `${method} ${path}`);
    }
  });

  it('documents every webhook event, its envelope and signature headers, in the webhooks section', async () => {
    const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
    const catalogue = (await env.request('GET', '/api/public/webhook-events', { key: null })).body;
    const names = catalogue.data.map((event: JsonBody) => event.name);
    assert.ok(names.length >= 8);
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...names].sort());
    for (const name of names) {
      const post = doc.webhooks[name].post;
      const ref = post.requestBody.content['application/json'].schema.$ref as string;
      const envelope = doc.components.schemas[ref.replace('#/components/schemas/', '')];
      assert.deepEqual(envelope.required, ['id', 'event', 'createdAt', 'brandId', 'data'], `${name} envelope`);
      assert.deepEqual(envelope.properties.event.enum, [name], `${name} envelope names its event`);
      const headers = post.parameters.map((p: JsonBody) => p.name);
      assert.deepEqual(headers, ['X-Service-Signature', 'X-Service-Event', 'X-Service-Webhook-Id']);
    }
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
