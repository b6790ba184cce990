/**
 * Authentication and brand isolation on every route that takes an API key, enumerated from
 * the router and the OpenAPI document: no key, a revoked key or a malformed header is 401;
 * brand B's key with brand A's ids is 404 and changes none of A's rows; B's lists and
 * filters never show A's data; A's ids named in B's bodies are 422.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { insertApiKey, revokeApiKey } from '../../src/modules/apiKeys/service.js';
import { createTestEnv, expectError, testedDialects } from '../helpers.js';
import {
  createResources,
  fillPath,
  isPartnerApi,
  label,
  loadAllRoutes,
  type Operation,
  type Resources,
  resourceFor,
  snapshotBrand,
  takesKey,
  UNLIMITED,
} from './support.js';

/** A valid body for each keyed route with an id param and a body, so the id check is what answers. */
const VALID_BODIES: Record<string, unknown> = {
  'PATCH /api/v1/offers/{id}': { name: 'Renamed by B', status: 'paused' },
  'PATCH /api/v1/partners/{id}': { metadata: { by: 'B' } },
  'POST /api/v1/partners/{id}/ban': { reason: 'banned by B' },
  'POST /api/v1/conversions/{id}/reject': { reason: 'rejected by B' },
  'POST /api/v1/partners/{id}/postbacks': { url: 'https://b.example/pb?c={click_id}', events: ['conversion.created'] },
  'POST /api/v1/payouts/{id}/mark-paid': { reference: 'paid by B' },
  'PATCH /api/public/webhooks/{id}': { url: 'http://127.0.0.1:9/b', status: 'disabled' },
  'POST /api/public/webhooks/{id}/rotate-secret': { secret: 'whsec_rotated_by_brand_b_0123456789' },
  'POST /api/public/webhooks/{id}/recover': { since: '2020-01-01T00:00:00.000Z' },
  'POST /api/public/webhooks/{id}/test': { event: 'conversion.created' },
  'POST /api/public/events/{id}/resend': { subscriptionId: 'sub_of_brand_b_or_none' },
};

function bodyFor(route: Operation): unknown {
  if (!route.bodySchema) return undefined;
  const body = VALID_BODIES[label(route)];
  // Action routes without fields declare an empty, closed body: nothing to fill in.
  const hasFields = Object.keys((route.bodySchema as { properties?: object }).properties ?? {}).length > 0;
  if (body === undefined && route.pathParams.length > 0 && hasFields) {
    throw new Error(`isolation.test.ts: add a valid body for ${label(route)} to VALID_BODIES`);
  }
  return body ?? {};
}

/** The ids of a resource kind to try: an applicant too for partner routes (approve acts on applicants). */
function candidates(resources: Resources, kind: keyof Resources): string[] {
  return kind === 'partner' ? [resources.partner, resources.applicant] : [resources[kind]];
}

/** Every way to fill a route's params from A's and B's ids, with at least one of A's. */
function fillings(route: Operation, a: Resources, b: Resources): Array<{ url: string; ids: string }> {
  let partial: Array<{ values: Record<string, string>; anyA: boolean }> = [{ values: {}, anyA: false }];
  for (const param of route.pathParams) {
    const kind = resourceFor(route.path, param);
    if (!kind) throw new Error(`no resource known for {${param}} of ${label(route)}: add it to PARAM_RESOURCES`);
    partial = partial.flatMap((p) => [
      ...candidates(a, kind).map((id) => ({ values: { ...p.values, [param]: id }, anyA: true })),
      { values: { ...p.values, [param]: b[kind] }, anyA: p.anyA },
    ]);
  }
  return partial
    .filter((p) => p.anyA)
    .map((p) => ({ url: fillPath(route.path, (name) => p.values[name] ?? ''), ids: JSON.stringify(p.values) }));
}

for (const dialect of testedDialects()) {
  describe(`Authentication and brand isolation on every keyed route (${dialect})`, async () => {
    const env = await createTestEnv(dialect, { env: UNLIMITED });
    after(() => env.close());
    const routes = await loadAllRoutes(env);
    const keyed = routes.filter((route) => takesKey(route.path));
    const brandA = env.brand;
    const a = await createResources(env, brandA.apiKey, brandA.slug);
    const brandB = await env.createBrand('Brand B');
    const b = await createResources(env, brandB.apiKey, brandB.slug);
    const { secret: revokedKey, key } = await env.ctx.db.transact((trx) =>
      insertApiKey(trx, env.clock, { brandId: brandA.id, name: 'revoked' }),
    );
    await revokeApiKey(env.ctx.db, env.clock, key.id);
    const secretsOfA = Object.values(a);
    const before = await snapshotBrand(env, brandA.id);
    let calls = 0;
    after(() => console.log(`isolation (${dialect}): ${keyed.length} keyed routes, ${calls} requests`));

    /** Asserts B saw nothing of A: none of A's ids, tokens or secrets anywhere in the answer. */
    function assertNothingOfA(body: unknown, context: string): void {
      const text = JSON.stringify(body) ?? '';
      const leaked = secretsOfA.filter((value) => text.includes(value));
      assert.deepEqual(leaked, [], `${context} shows brand A's ${leaked.join(', ')}`);
    }

    it('covers a non-trivial set of keyed routes, each documented with bearerAuth', () => {
      assert.ok(keyed.length >= 30, `only ${keyed.length} keyed routes found`);
      const undocumented = keyed.filter((route) => !route.documentedKeyed).map(label);
      assert.deepEqual(undocumented, [], 'keyed routes without bearerAuth in the OpenAPI document');
      const stray = routes.filter((route) => route.documentedKeyed && !takesKey(route.path)).map(label);
      assert.deepEqual(stray, [], 'routes documented with bearerAuth outside the keyed prefixes');
    });

    it('knows how to fill every id param of every keyed route', () => {
      const unknown = keyed.flatMap((route) =>
        route.pathParams
          .filter((param) => !resourceFor(route.path, param))
          .map((param) => `${label(route)} {${param}}`),
      );
      assert.deepEqual(unknown, [], 'add these to PARAM_RESOURCES in test/security/support.ts');
    });

    for (const route of keyed) {
      it(`${label(route)} answers 401 without a key, with a revoked key and with a malformed header`, async () => {
        const url = fillPath(route.path, (param) => {
          const kind = resourceFor(route.path, param);
          return kind ? a[kind] : 'unknown';
        });
        const headers = [
          null,
          `Bearer ${revokedKey}`,
          'Basic x',
          `Basic ${brandA.apiKey}`,
          'Bearer',
          'Bearer ',
          `Token ${brandA.apiKey}`,
          `Bearer ${brandA.apiKey}x`,
          `Bearer ${brandA.apiKey.slice(0, -1)}`,
          `Bearer ${brandA.apiKey},${brandB.apiKey}`,
        ];
        for (const authorization of headers) {
          calls += 1;
          const res = await env.request(route.method, url, {
            key: null,
            body: bodyFor(route),
            headers: authorization === null ? {} : { authorization },
          });
          expectError(res, 401, 'unauthorized');
        }
      });
    }

    for (const route of keyed.filter((r) => r.pathParams.length > 0)) {
      it(`${label(route)} with brand B's key and brand A's ids answers 404 and changes nothing of A`, async () => {
        for (const { url, ids } of fillings(route, a, b)) {
          calls += 1;
          const res = await env.request(route.method, url, { key: brandB.apiKey, body: bodyFor(route) });
          assert.equal(res.status, 404, `${label(route)} ${ids}: ${res.status} ${JSON.stringify(res.body)}`);
          expectError(res, 404, 'not_found');
          assertNothingOfA(res.body, `${label(route)} ${ids}`);
        }
        assert.deepEqual(await snapshotBrand(env, brandA.id), before, `${label(route)} changed brand A's data`);
      });
    }

    it("never shows A's data in B's lists, with or without A's ids as filters", async () => {
      // Brand B's key opens no partner-API list (401): partner isolation is tested in test/partnerApi.
      const lists = keyed.filter(
        (route) => route.method === 'GET' && route.pathParams.length === 0 && !isPartnerApi(route.path),
      );
      assert.ok(lists.length >= 8, `${lists.length} list routes`);
      for (const route of lists) {
        const filters = route.query
          .filter((q) => ['offerId', 'partnerId', 'externalTxnId', 'cursor'].includes(q.name))
          .map((q) => `${q.name}=${q.name === 'partnerId' ? a.partner : q.name === 'cursor' ? 'zzzz' : a.offer}`);
        for (const url of [route.path, `${route.path}?${filters.join('&')}`]) {
          calls += 1;
          const res = await env.request('GET', url, { key: brandB.apiKey });
          assert.ok(res.status === 200 || res.status === 422, `${url}: ${res.status} ${JSON.stringify(res.body)}`);
          assertNothingOfA(res.body, `GET ${url}`);
        }
      }
      assert.equal((await env.request('GET', '/api/v1/brand', { key: brandB.apiKey })).body.id, brandB.id);
    });

    it("answers 422 when B names A's offer, partner or click in a body, and creates nothing", async () => {
      const attempts: Array<[string, unknown]> = [
        ['/api/v1/conversions', { clickId: a.click }],
        ['/api/v1/conversions', { offerId: a.offer, partnerId: a.partner }],
        ['/api/v1/conversions', { offerId: b.offer, partnerId: a.partner }],
        ['/api/v1/conversions', { offerId: a.offer, partnerId: b.partner }],
        [
          `/api/v1/partners/${b.partner}/postbacks`,
          { url: 'https://b.example/?c={click_id}', events: ['conversion.created'], offerId: a.offer },
        ],
      ];
      for (const [url, body] of attempts) {
        calls += 1;
        const res = await env.request('POST', url, { key: brandB.apiKey, body });
        expectError(res, 422, 'validation_error');
        assertNothingOfA(res.body, `POST ${url} ${JSON.stringify(body)}`);
      }
      assert.deepEqual(await snapshotBrand(env, brandA.id), before);
    });

    it("refuses a pixel postback that mixes one brand's token with another brand's click", async () => {
      for (const [token, click] of [
        [a.postbackToken, b.click],
        [b.postbackToken, a.click],
      ]) {
        calls += 1;
        const res = await env.request('GET', `/postback?token=${token}&click_id=${click}&txn_id=x1`, { key: null });
        expectError(res, 422, 'validation_error');
      }
      assert.deepEqual(await snapshotBrand(env, brandA.id), before);
    });
  });
}
