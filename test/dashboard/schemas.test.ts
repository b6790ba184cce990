import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { DashboardClient, signedInClient } from './client.js';

/**
 * Every route the app registered under `prefix`, read from Fastify's own route tree
 * (`printRoutes`), with path parameters filled in (ids need not exist). HEAD routes are
 * Fastify's copies of the GETs. Deriving the list means a page added later is checked too.
 */
function registeredRoutes(app: FastifyInstance, prefix: string): Array<{ method: string; url: string }> {
  const routes: Array<{ method: string; url: string }> = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const node = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!node) continue;
    const depth = (node[1] ?? '').length / 4;
    const url = (parents[depth - 1] ?? '') + node[2];
    parents.length = depth;
    parents.push(url);
    for (const method of (node[3] ?? '').split(', ')) {
      if (method && method !== 'HEAD' && url.startsWith(prefix))
        routes.push({ method, url: url.replace(/:\w+/g, 'x') });
    }
  }
  return routes;
}

/** Every page a signed-in user can open, and every form they can post; not the static assets. */
function dashboardRoutes(app: FastifyInstance) {
  const routes = registeredRoutes(app, '/dashboard').filter((r) => !r.url.startsWith('/dashboard/assets/'));
  const pages = routes.filter((r) => r.method === 'GET').map((r) => r.url);
  const forms = routes.filter((r) => r.method === 'POST').map((r) => r.url);
  // The derivation itself must not go quiet: these are known routes of each kind.
  for (const url of ['/dashboard', '/dashboard/offers/x', '/dashboard/payouts/x/export.csv', '/dashboard/settings']) {
    assert.ok(pages.includes(url), `${url} is among the pages found: ${pages.join(' ')}`);
  }
  for (const url of ['/dashboard/logout', '/dashboard/offers', '/dashboard/settings/blocklist/x/delete']) {
    assert.ok(forms.includes(url), `${url} is among the forms found: ${forms.join(' ')}`);
  }
  assert.equal(routes.length, pages.length + forms.length, 'the dashboard answers only GET and POST');
  return { pages, forms };
}

function assertRefusedPage(res: { status: number; body: string; headers: Record<string, unknown> }, what: string) {
  assert.equal(res.status, 422, what);
  assert.match(String(res.headers['content-type']), /^text\/html/, what);
  assert.match(res.body, /<h1>Not accepted<\/h1>/, what);
}

for (const dialect of testedDialects()) {
  describe(`dashboard route schemas (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    let pages: string[];
    let forms: string[];
    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
      ({ pages, forms } = dashboardRoutes(env.app));
    });
    after(() => env.close());

    it('answers a query parameter no page knows with a 422 page naming it (escaped)', async () => {
      for (const url of pages) {
        const res = await client.get(`${url}?%3Cb%3Ex=1`);
        assertRefusedPage(res, url);
        assert.match(res.body, /&lt;b>x in the address: is not expected here/, url);
      }
    });

    it('answers a form field no form knows with a 422 page, and changes nothing', async () => {
      // Sign-in is the one form posted without a session: its token is the signed-out page's.
      const visitor = new DashboardClient(env);
      await visitor.get('/dashboard/login');
      for (const url of forms) {
        assertRefusedPage(
          await (url === '/dashboard/login' ? visitor : client).post(url, {
            name: 'Smuggled',
            destinationUrl: 'https://x.example/',
            x: '1',
          }),
          url,
        );
      }
      const offers = await env.request('GET', '/api/v1/offers');
      assert.equal(offers.body.data.length, 0);
    });

    it('answers values of the wrong shape with a 422 page, never a 500', async () => {
      for (const url of [
        '/dashboard/offers?status=deleted',
        '/dashboard/offers?cursor=a&cursor=b',
        '/dashboard/conversions?status=maybe',
        `/dashboard/conversions?txn=${'x'.repeat(256)}`,
        '/dashboard/deliveries?kind=email',
        '/dashboard/reports?offset=-1',
        '/dashboard/reports?offset=ten',
        '/dashboard/reports?by=campaign',
        '/dashboard/reports?time=year',
      ]) {
        assertRefusedPage(await client.get(url), url);
      }
      // One value where the form sends one: a repeated name is not a person's doing.
      assertRefusedPage(await client.post('/dashboard/settings/api-keys', { name: ['a', 'b'] }), 'repeated field');
      assertRefusedPage(
        await client.post('/dashboard/settings/blocklist', { type: 'ip', value: 'x'.repeat(5000) }),
        'over-long field',
      );
    });

    it("answers an address the router cannot decode with the dashboard's 400 page, not the API's JSON", async () => {
      const visitor = new DashboardClient(env);
      for (const [who, as] of [
        ['signed in', client],
        ['signed out', visitor],
      ] as const) {
        for (const url of ['/dashboard/offers/%zz', '/dashboard/webhooks/sub_%ff', '/dashboard/no-such-page/%']) {
          const res = await as.get(url);
          const where = `${who} GET ${url}`;
          assert.equal(res.status, 400, where);
          assert.match(String(res.headers['content-type']), /^text\/html/, where);
          assert.match(res.body, /<h1>Bad request<\/h1>/, where);
          assert.match(res.body, /not validly encoded/, where);
          assert.match(res.body, /href="\/dashboard"/, `${where}: a way back`);
          // The headers every dashboard page has (test/security/headers.test.ts checks them all).
          assert.equal(res.headers['cache-control'], 'no-store', where);
          assert.equal(res.headers['x-frame-options'], 'DENY', where);
          assert.match(String(res.headers['content-security-policy']), /script-src 'self'/, where);
          assert.ok(res.headers['x-request-id'], where);
        }
      }
      // A path segment over the router's limit matches no page: the dashboard's 404, not JSON.
      const overlong = await client.get(`/dashboard/offers/off_${'x'.repeat(1001)}`);
      assert.equal(overlong.status, 404);
      assert.match(overlong.body, /<h1>Not found<\/h1>/);
      // A form posted to such an address is refused the same way (before its token is checked).
      const posted = await client.post('/dashboard/offers/%zz/edit', { name: 'x' });
      assert.equal(posted.status, 400);
      assert.match(posted.body, /<h1>Bad request<\/h1>/);
      // The API keeps its JSON error.
      const api = await env.request('GET', '/api/v1/offers/%zz');
      assert.equal(api.status, 400);
      assert.equal(api.body.error.code, 'bad_request');
    });

    it('keeps the friendly answers for what people type: messages on the page, filters kept', async () => {
      const bad = await client.get('/dashboard/conversions?from=2026-02-30&status=&offerId=&txn=');
      assert.equal(bad.status, 422);
      assert.match(bad.body, /id="from-error">is not a calendar date</);
      const form = await client.post('/dashboard/offers', { name: '', destinationUrl: '' });
      assert.equal(form.status, 422);
      assert.match(form.body, /<p class="field-error" id="name-error">is required<\/p>/);
      const ticked = await client.get('/dashboard/reports?time=&by=offer&by=partner&offset=0');
      assert.equal(ticked.status, 200);
      assert.match(ticked.body, /name="by" value="offer" checked/);
      assert.match(ticked.body, /name="by" value="partner" checked/);
    });
  });
}
