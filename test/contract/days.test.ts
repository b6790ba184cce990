import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestBrand, type TestEnv, testedDialects } from '../helpers.js';
import { listen, type WireClient } from './http.js';

for (const dialect of testedDialects()) {
  describe(`day filters count brand-local days (${dialect})`, () => {
    let env: TestEnv;
    let http: WireClient;
    let brand: TestBrand;
    let conversionId: string;
    before(async () => {
      env = await createTestEnv(dialect);
      http = await listen(env);
      brand = await env.createBrand('New York', { timezone: 'America/New_York' });
      const key = brand.apiKey;
      const offer = await http.call('POST', '/api/v1/offers', {
        key,
        body: { name: 'O', destinationUrl: 'https://shop.example/' },
      });
      const partner = await http.call('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } });
      // 03:00 UTC on the 21st is still the 20th in New York (UTC-5).
      env.clock.set(Date.UTC(2026, 10, 21, 3, 0, 0));
      const conversion = await http.call('POST', '/api/v1/conversions', {
        key,
        body: { offerId: offer.body.id, partnerId: partner.body.id },
      });
      conversionId = conversion.body.id;
    });
    after(() => env.close());

    const listed = async (query: string) => {
      const res = await http.call('GET', `/api/v1/conversions${query}`, { key: brand.apiKey });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data.map((c: { id: string }) => c.id);
    };

    it('lists a conversion on the brand-local day the report counts it on', async () => {
      assert.deepEqual(await listed('?from=2026-11-20&to=2026-11-20'), [conversionId]);
      assert.deepEqual(await listed('?from=2026-11-21&to=2026-11-21'), []);
      const report = await http.call('GET', '/api/v1/reports?from=2026-11-20&to=2026-11-20', { key: brand.apiKey });
      assert.equal(report.body.totals.conversions, 1);
      const nextDay = await http.call('GET', '/api/v1/reports?from=2026-11-21&to=2026-11-21', { key: brand.apiKey });
      assert.equal(nextDay.body.totals.conversions, 0);
    });

    it('takes explicit timestamps for UTC (or any other) cut-offs', async () => {
      assert.deepEqual(await listed('?from=2026-11-21T00:00:00Z&to=2026-11-21T23:59:59.999Z'), [conversionId]);
      assert.deepEqual(await listed('?to=2026-11-21T02:59:59.999Z'), []);
      assert.deepEqual(await listed('?from=2026-11-20T22:00:00-05:00'), [conversionId]);
    });

    it('refuses a reversed or malformed range', async () => {
      const reversed = await http.call('GET', '/api/v1/conversions?from=2026-11-21&to=2026-11-20', {
        key: brand.apiKey,
      });
      assert.equal(reversed.status, 422);
      assert.equal(reversed.body.error.details[0].path, 'query.from');
      const bad = await http.call('GET', '/api/v1/conversions?from=yesterday', { key: brand.apiKey });
      assert.equal(bad.status, 422);
      assert.match(bad.body.error.details[0].message, /YYYY-MM-DD/);
    });
  });
}
