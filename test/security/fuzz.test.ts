/**
 * Property-based bad-input tests over every operation of the served OpenAPI document (plus
 * the hidden public pages): hostile bodies, path params, query strings and headers. The
 * property: never a 5xx; on JSON routes every 4xx is exactly the error shape; the service
 * is healthy afterwards and no prototype was polluted. FUZZ_RUNS and FUZZ_SEED widen the
 * search locally (the default seed keeps CI deterministic).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { createTestEnv, testedDialects } from '../helpers.js';
import {
  bodyArbitrary,
  headerArbitrary,
  pathParamArbitrary,
  plausible,
  queryArbitrary,
  type RawBody,
} from './arbitraries.js';
import {
  assertErrorShape,
  createResources,
  fillPath,
  label,
  loadAllRoutes,
  type Operation,
  type Resources,
  resourceFor,
  takesKey,
  UNLIMITED,
} from './support.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const SEED = Number(process.env.FUZZ_SEED ?? 20240601);

/** A route that does not exist, for the not-found handler. */
const UNKNOWN: Operation = {
  method: 'GET',
  path: '/api/v1/{nothing}',
  pathParams: ['nothing'],
  query: [],
  bodySchema: null,
  documentedKeyed: true,
};

/** Resource kinds by the collection a path param follows (dashboard pages included). */
const COLLECTIONS: Record<string, keyof Resources> = {
  offers: 'offer',
  partners: 'partner',
  conversions: 'conversion',
  webhooks: 'subscription',
  deliveries: 'delivery',
  blocklist: 'blocklist',
  payouts: 'payout',
};

/** Pages answered in HTML (or images), exempt from the JSON error shape but never a 5xx. */
const isPage = (path: string) => /^\/(apply|t|dashboard|docs|portal)(\/|$)/.test(path);

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: RawBody | null;
}

function describeRequest(req: FuzzRequest): string {
  const body = req.body ? ` [${req.body.contentType}] ${String(req.body.payload).slice(0, 300)}` : '';
  return `${req.method} ${req.url.slice(0, 300)} ${JSON.stringify(req.headers).slice(0, 300)}${body}`;
}

for (const dialect of testedDialects()) {
  describe(`Every operation under hostile input (${dialect})`, async () => {
    const env = await createTestEnv(dialect, { env: UNLIMITED });
    const operations = [...(await loadAllRoutes(env)), UNKNOWN];
    const resources: Resources = await createResources(env, env.brand.apiKey, env.brand.slug);
    const ids = [
      resources.offer,
      resources.partner,
      resources.applicant,
      resources.click,
      resources.conversion,
      resources.subscription,
      resources.delivery,
      resources.blocklist,
      resources.postback,
      resources.payout,
    ];
    const stats = { requests: 0, operations: 0, byClass: {} as Record<string, number> };
    after(async () => {
      console.log(
        `fuzz (${dialect}): ${stats.requests} requests, ${stats.operations} operations, ` +
          `statuses ${JSON.stringify(stats.byClass)}, ${stats.byClass['5xx'] ?? 0} 5xx`,
      );
      await env.close();
    });

    /** Real values for a path param: the matching resource first, then any id of the brand. */
    function realValues(op: Operation, param: string): string[] {
      const collection =
        op.path
          .slice(0, op.path.indexOf(`{${param}}`))
          .split('/')
          .filter(Boolean)
          .pop() ?? '';
      const kind = resourceFor(op.path, param) ?? COLLECTIONS[collection] ?? null;
      const named: Record<string, string> = {
        offerId: resources.offer,
        partnerId: resources.partner,
        brandSlug: env.brand.slug,
        name: 'app.css',
      };
      const first = kind ? resources[kind] : named[param];
      return first ? [first, first, first, ...ids] : ids;
    }

    function requestArbitrary(op: Operation): fc.Arbitrary<FuzzRequest> {
      const keyed = takesKey(op.path) || op.documentedKeyed;
      const params = op.pathParams.map((p) => pathParamArbitrary(realValues(op, p)));
      const knownQuery = (name: string) => {
        const param = op.query.find((q) => q.name === name);
        return param?.schema ? plausible(param.schema, name, ids) : fc.string({ maxLength: 20 });
      };
      const bodyless = fc.constant(null);
      return fc
        .record({
          params: fc.tuple(...params),
          query: fc.oneof(
            fc.constant(''),
            queryArbitrary(
              op.query.map((q) => q.name),
              knownQuery,
            ),
          ),
          headers: fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, headerArbitrary(env.brand.apiKey)),
          body: op.bodySchema
            ? bodyArbitrary(op.bodySchema, ids)
            : op.method === 'GET' || op.method === 'DELETE'
              ? fc.oneof({ weight: 5, arbitrary: bodyless }, bodyArbitrary(null, ids))
              : fc.oneof(bodyless, bodyArbitrary(null, ids)),
        })
        .map(({ params, query, headers, body }) => {
          const path = fillPath(op.path, (name) => params[op.pathParams.indexOf(name)] ?? '');
          const base: Record<string, string> = keyed ? { authorization: `Bearer ${env.brand.apiKey}` } : {};
          return { method: op.method, url: query ? `${path}?${query}` : path, headers: { ...base, ...headers }, body };
        });
    }

    async function send(req: FuzzRequest) {
      const headers = { ...req.headers };
      if (req.body?.contentType) headers['content-type'] = req.body.contentType;
      const response = await env.app.inject({
        method: req.method as 'GET',
        url: req.url,
        headers,
        ...(req.body ? { payload: req.body.payload } : {}),
      });
      let body: unknown = response.body;
      if (String(response.headers['content-type'] ?? '').includes('json')) {
        try {
          body = response.json();
        } catch {
          body = `(unparsable JSON) ${response.body.slice(0, 200)}`;
        }
      }
      return { status: response.statusCode, body, contentType: String(response.headers['content-type'] ?? '') };
    }

    for (const op of operations) {
      it(`${label(op)} never answers 5xx, and answers errors in the error shape`, async () => {
        stats.operations += 1;
        // Signed-out dashboard pages all end at the sign-in redirect: fewer runs buy the same.
        const numRuns = op.path.startsWith('/dashboard') ? Math.ceil(RUNS / 3) : RUNS;
        await fc.assert(
          fc.asyncProperty(requestArbitrary(op), async (req) => {
            const res = await send(req);
            stats.requests += 1;
            const statusClass = `${Math.floor(res.status / 100)}xx`;
            stats.byClass[statusClass] = (stats.byClass[statusClass] ?? 0) + 1;
            assert.ok(res.status < 500, `${res.status} for ${describeRequest(req)}: ${JSON.stringify(res.body)}`);
            if (res.status < 400 || isPage(op.path)) return;
            assertErrorShape(res, describeRequest(req));
          }),
          { numRuns, seed: SEED + operations.indexOf(op), endOnFailure: true },
        );
      });
    }

    /** Sends with the brand's key and JSON content type; returns status and parsed body. */
    const hostile = (method: string, url: string, payload?: string) =>
      send({
        method,
        url,
        headers: { authorization: `Bearer ${env.brand.apiKey}` },
        body: payload === undefined ? null : { contentType: 'application/json', payload },
      });

    it('answers a deeply nested JSON body (depth 10 000, 20 kB) with a 4xx, not 500', async () => {
      const nested = `{"name":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
      for (const [method, url] of [
        ['PATCH', '/api/v1/brand'],
        ['POST', '/api/public/partners/apply'],
      ] as const) {
        const res = await hostile(method, url, nested);
        assert.ok(res.status >= 400 && res.status < 500, `${method} ${url} → ${res.status}`);
        assertErrorShape(res, `${method} ${url}`);
      }
    });

    it('answers a malformed percent-encoding in a path in the error shape', async () => {
      for (const id of ['%zz', '%', '%ff%fe', '%C0%AF']) {
        const res = await hostile('GET', `/api/v1/offers/${id}`);
        assert.ok(res.status === 400 || res.status === 404, `${id} → ${res.status}`);
        assertErrorShape(res, `GET /api/v1/offers/${id}`);
      }
    });

    it('answers a path param over 100 characters with 404 not_found in the error shape', async () => {
      const res = await hostile('GET', `/api/v1/offers/off_${'x'.repeat(200)}`);
      assert.equal(res.status, 404);
      assertErrorShape(res, 'GET /api/v1/offers/off_x…(200)');
    });

    it('answers 404 for a path id longer than the 64-character schema limit (DESIGN §2a: unknown path id is 404)', async () => {
      const res = await hostile('GET', `/api/v1/offers/off_${'x'.repeat(70)}`);
      assert.equal(res.status, 404, JSON.stringify(res.body));
    });

    it('answers 404 for dashboard asset names that are Object.prototype members', async () => {
      for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
        const res = await send({ method: 'GET', url: `/dashboard/assets/${name}`, headers: {}, body: null });
        assert.equal(res.status, 404, `GET /dashboard/assets/${name} → ${res.status}`);
      }
    });

    it('leaves no polluted prototype behind', () => {
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.getOwnPropertyNames(Object.prototype).includes('polluted'), false);
    });

    it('is healthy afterwards: /health, /ready and an authenticated request answer 200', async () => {
      assert.equal((await env.request('GET', '/health', { key: null })).status, 200);
      assert.equal((await env.request('GET', '/ready', { key: null })).status, 200);
      const brand = await env.request('GET', '/api/v1/brand');
      assert.equal(brand.status, 200);
      assert.equal(brand.body.id, env.brand.id);
    });
  });
}
