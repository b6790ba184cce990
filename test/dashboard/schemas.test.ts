import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

/** Every page a signed-in user can open, and every form they can post (ids need not exist). */
const PAGES = [
  '/dashboard',
  '/dashboard/offers',
  '/dashboard/offers/new',
  '/dashboard/offers/off_x',
  '/dashboard/partners',
  '/dashboard/partners/prt_x',
  '/dashboard/conversions',
  '/dashboard/conversions/conv_x',
  '/dashboard/reports',
  '/dashboard/reports/export.csv',
  '/dashboard/webhooks',
  '/dashboard/webhooks/new',
  '/dashboard/webhooks/sub_x',
  '/dashboard/deliveries',
  '/dashboard/deliveries/wh_x',
  '/dashboard/settings',
  '/dashboard/settings/api-keys',
  '/dashboard/settings/blocklist',
];
const FORMS = [
  '/dashboard/logout',
  '/dashboard/offers',
  '/dashboard/offers/off_x',
  '/dashboard/partners/prt_x/approve',
  '/dashboard/partners/prt_x/ban',
  '/dashboard/conversions/conv_x/approve',
  '/dashboard/conversions/conv_x/reject',
  '/dashboard/conversions/bulk',
  '/dashboard/webhooks',
  '/dashboard/webhooks/sub_x',
  '/dashboard/webhooks/sub_x/status',
  '/dashboard/webhooks/sub_x/delete',
  '/dashboard/deliveries/wh_x/redeliver',
  '/dashboard/settings',
  '/dashboard/settings/api-keys',
  '/dashboard/settings/api-keys/key_x/revoke',
  '/dashboard/settings/blocklist',
  '/dashboard/settings/blocklist/blk_x/delete',
];

function assertRefusedPage(res: { status: number; body: string; headers: Record<string, unknown> }, what: string) {
  assert.equal(res.status, 422, what);
  assert.match(String(res.headers['content-type']), /^text\/html/, what);
  assert.match(res.body, /<h1>Not accepted<\/h1>/, what);
}

for (const dialect of testedDialects()) {
  describe(`dashboard route schemas (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
    });
    after(() => env.close());

    it('answers a query parameter no page knows with a 422 page naming it (escaped)', async () => {
      for (const url of PAGES) {
        const res = await client.get(`${url}?%3Cb%3Ex=1`);
        assertRefusedPage(res, url);
        assert.match(res.body, /&lt;b>x in the address: is not expected here/, url);
      }
    });

    it('answers a form field no form knows with a 422 page, and changes nothing', async () => {
      for (const url of FORMS) {
        assertRefusedPage(
          await client.post(url, { name: 'Smuggled', destinationUrl: 'https://x.example/', x: '1' }),
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

    it('keeps the friendly answers for what people type: messages on the page, filters kept', async () => {
      const bad = await client.get('/dashboard/conversions?from=2026-02-30&status=&offerId=&txn=');
      assert.equal(bad.status, 200);
      assert.match(bad.body, /“From” must be a date\. That filter was ignored\./);
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
