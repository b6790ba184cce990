/**
 * `rollUpLoadedFacts`, the fold of a bulk load (the benchmarks' million rows, an import), on
 * both dialects: it writes the rollups the worker's fold job would, so reports read the same.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rollUpLoadedFacts } from '../../src/modules/analytics/bulkFold.js';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';

/** Every rollup row of the brand, as comparable text. */
async function rollups(env: TestEnv, brandId: string): Promise<string[]> {
  const rows = await env.ctx.db.read
    .selectFrom('analytics_rollups')
    .selectAll()
    .where('brand_id', '=', brandId)
    .execute();
  return rows
    .map((r) =>
      [r.dimension, r.level, r.value, r.day, r.offer_id, r.partner_id, r.currency]
        .concat([r.clicks, r.pending, r.approved, r.rejected, r.revenue_cents, r.payout_cents].map(Number).map(String))
        .join('|'),
    )
    .sort();
}

for (const dialect of testedDialects()) {
  describe(`bulk fold of loaded facts (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
    });
    after(() => env.close());

    /** A brand with clicks from two countries and devices and a conversion; its facts not folded. */
    async function brandWithTraffic(name: string): Promise<{ id: string }> {
      const brand = await env.createBrand(name);
      const call = (method: string, url: string, body?: unknown) =>
        env.app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${brand.apiKey}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        });
      const offerId = (await call('POST', '/api/v1/offers', { name: 'O', destinationUrl: 'https://o.example/' })).json()
        .id;
      const partnerId = (await call('POST', '/api/v1/partners', { name: 'P', email: 'p@example.com' })).json().id;
      for (const [ua, ip] of [
        [CHROME, '81.2.69.142'],
        [IPHONE, '8.8.8.8'],
        [IPHONE, '8.8.8.8'],
      ] as const) {
        const res = await env.app.inject({
          method: 'GET',
          url: `/t/${offerId}/${partnerId}?sub1=news`,
          headers: { 'user-agent': ua, 'x-forwarded-for': ip },
        });
        assert.equal(res.statusCode, 302);
      }
      assert.equal((await call('POST', '/api/v1/conversions', { offerId, partnerId })).statusCode, 201);
      return { id: brand.id };
    }

    it('writes the same rollups as the fold job', async () => {
      const bulk = await brandWithTraffic('Bulk');
      await env.ctx.db.transact((trx) => rollUpLoadedFacts(trx, bulk.id));
      const folded = await brandWithTraffic('Folded');
      // The fold job takes every brand's unfolded facts: fold the second brand's that way.
      while ((await foldFacts(env.ctx)) > 0) {}
      const bulkRows = await rollups(env, bulk.id);
      assert.ok(
        bulkRows.some((r) => r.startsWith('country|0|US|')),
        'a country rollup row',
      );
      assert.ok(
        bulkRows.some((r) => r.startsWith('|0||')),
        'a rollup row without attribute',
      );
      // The brands' offers and partners have their own ids; everything else must be equal.
      const anonymous = (rows: string[]) => rows.map((r) => r.replace(/off_\w+|prt_\w+/g, 'id'));
      assert.deepEqual(anonymous(bulkRows), anonymous(await rollups(env, folded.id)));
    });
  });
}
