import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';

for (const dialect of testedDialects()) {
  describe(`dashboard analytics (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      client = await signedInClient(env);
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      for (const currency of ['EUR', 'USD']) {
        const offerId = (
          await env.request('POST', '/api/v1/offers', {
            body: {
              name: currency,
              destinationUrl: 'https://o.example/',
              currency,
              revenueCents: 1000,
              payoutCents: 100,
            },
          })
        ).body.id;
        const res = await env.app.inject({
          method: 'GET',
          url: `/t/${offerId}/${partnerId}`,
          headers: { 'user-agent': CHROME, 'x-forwarded-for': '81.2.69.142' },
        });
        assert.equal(res.statusCode, 302);
        await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      }
    });
    after(() => env.close());

    it('builds a report by the dimensions picked, with a chart of the top rows and rows per currency', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&d2=deviceType&d3=');
      assert.equal(page.status, 200);
      assert.match(page.body, /id="analytics-chart-title"/);
      assert.match(page.body, /<th scope="row"[^>]*>GB<\/th><th scope="row"[^>]*>desktop<\/th><td[^>]*>EUR<\/td>/);
      assert.match(page.body, /<th scope="row"[^>]*>GB<\/th><th scope="row"[^>]*>desktop<\/th><td[^>]*>USD<\/td>/);
      assert.match(page.body, /href="\/dashboard\/analytics"/);
    });

    it('filters by a dimension value', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&country=DE');
      assert.equal(page.status, 200);
      assert.match(page.body, /No activity in this range/);
    });

    it('shows the report service’s complaint for a bad range (422)', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-30&to=2026-11-01&d1=day');
      assert.equal(page.status, 422);
      assert.match(page.body, /must not be after to/);
    });

    it('shows the overview’s totals per currency, never added together', async () => {
      const page = await client.get('/dashboard');
      assert.equal(page.status, 200);
      assert.match(page.body, /Last 30 days in EUR/);
      assert.match(page.body, /Last 30 days in USD/);
    });
  });
}
