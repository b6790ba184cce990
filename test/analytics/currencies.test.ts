import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

for (const dialect of testedDialects()) {
  describe(`GET /api/v1/reports with several currencies (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    /** A brand with an EUR offer (11,250 EUR of revenue) and a USD offer (2,000 USD), as in issue #15. */
    async function mixedBrand(name: string) {
      const { apiKey: key } = await env.createBrand(name);
      const offer = async (currency: string, revenueCents: number, payoutCents: number) =>
        (
          await env.request('POST', '/api/v1/offers', {
            key,
            body: { name: currency, destinationUrl: 'https://o.example/', currency, revenueCents, payoutCents },
          })
        ).body.id as string;
      const eur = await offer('EUR', 11250, 4000);
      const usd = await offer('USD', 2000, 500);
      const partner = (
        await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } })
      ).body.id as string;
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      for (const offerId of [eur, usd]) {
        const res = await env.request('POST', '/api/v1/conversions', { key, body: { offerId, partnerId: partner } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }
      const report = async (query: string) => {
        const res = await env.request('GET', `/api/v1/reports?from=2026-11-21&to=2026-11-21&${query}`, { key });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body;
      };
      return { key, eur, usd, partner, report };
    }

    it('never adds amounts of different currencies: one row and one total per currency', async () => {
      const b = await mixedBrand('Mixed');
      const res = await b.report('');
      assert.deepEqual(
        res.data.map((r: { currency: string; revenueCents: number; conversions: number }) => [
          r.currency,
          r.revenueCents,
          r.conversions,
        ]),
        [
          ['EUR', 11250, 1],
          ['USD', 2000, 1],
        ],
      );
      assert.deepEqual(
        res.totalsByCurrency.map((t: { currency: string; revenueCents: number; payoutCents: number }) => [
          t.currency,
          t.revenueCents,
          t.payoutCents,
        ]),
        [
          ['EUR', 11250, 4000],
          ['USD', 2000, 500],
        ],
      );
      assert.equal(res.totals.currency, null);
      assert.equal(res.totals.conversions, 2);
      assert.equal(res.totals.revenueCents, null);
      assert.equal(res.totals.payoutCents, null);
    });

    it('splits a grouped row by currency when one offer converts in two currencies', async () => {
      const b = await mixedBrand('Split');
      const res = await env.request('POST', '/api/v1/conversions', {
        key: b.key,
        body: { offerId: b.usd, partnerId: b.partner, currency: 'EUR', revenueCents: 700, payoutCents: 100 },
      });
      assert.equal(res.status, 201);
      const byOffer = await b.report('groupBy=offer');
      const usdOffer = byOffer.data
        .filter((r: { offerId: string }) => r.offerId === b.usd)
        .map((r: { currency: string; revenueCents: number }) => [r.currency, r.revenueCents]);
      assert.deepEqual(usdOffer, [
        ['EUR', 700],
        ['USD', 2000],
      ]);
      assert.deepEqual(
        byOffer.totalsByCurrency.map((t: { currency: string; revenueCents: number }) => [t.currency, t.revenueCents]),
        [
          ['EUR', 11950],
          ['USD', 2000],
        ],
      );
    });

    it('counts clicks in their offer’s currency, so EPC divides like by like', async () => {
      const b = await mixedBrand('Clicks');
      for (const offerId of [b.eur, b.eur, b.usd]) {
        const res = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${b.partner}` });
        assert.equal(res.statusCode, 302);
      }
      const res = await b.report('');
      const eur = res.totalsByCurrency.find((t: { currency: string }) => t.currency === 'EUR');
      const usd = res.totalsByCurrency.find((t: { currency: string }) => t.currency === 'USD');
      assert.equal(eur.clicks, 2);
      assert.equal(eur.epcCents, 2000);
      assert.equal(usd.clicks, 1);
      assert.equal(usd.epcCents, 500);
      assert.equal(res.totals.clicks, 3);
    });

    it('gives one currency and its amounts in totals when the report has one currency', async () => {
      const b = await mixedBrand('Single');
      const res = await b.report(`offerId=${b.eur}`);
      assert.equal(res.totals.currency, 'EUR');
      assert.equal(res.totals.revenueCents, 11250);
      assert.deepEqual(res.totalsByCurrency, [res.totals]);
    });

    it('answers the same before and after the facts are folded into rollups', async () => {
      const b = await mixedBrand('Folded');
      const queries = ['', 'groupBy=offer', 'groupBy=day,partner', `partnerId=${b.partner}&groupBy=offer`];
      const before = await Promise.all(queries.map((q) => b.report(q)));
      assert.ok((await foldFacts(env.ctx)) > 0);
      const afterFold = await Promise.all(queries.map((q) => b.report(q)));
      assert.deepEqual(afterFold, before);
      assert.equal(afterFold[0].totals.conversions, 2);
    });
  });
}
