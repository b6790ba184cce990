import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidError } from '../../src/errors.js';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { buildReport } from '../../src/modules/reports/service.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const METRIC_KEYS = [
  'approved',
  'clicks',
  'conversionRate',
  'conversions',
  'currency',
  'epcCents',
  'payoutCents',
  'pending',
  'profitCents',
  'rejected',
  'revenueCents',
];

/** Metrics of a report row with no clicks (clicks, rates and EPC all 0). */
function metrics(m: { pending?: number; approved?: number; rejected?: number; revenue?: number; payout?: number }) {
  const pending = m.pending ?? 0;
  const approved = m.approved ?? 0;
  const revenueCents = m.revenue ?? 0;
  const payoutCents = m.payout ?? 0;
  return {
    currency: 'USD',
    clicks: 0,
    conversions: pending + approved,
    approved,
    pending,
    rejected: m.rejected ?? 0,
    revenueCents,
    payoutCents,
    profitCents: revenueCents - payoutCents,
    conversionRate: 0,
    epcCents: 0,
  };
}

for (const dialect of testedDialects()) {
  describe(`GET /api/v1/reports (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    /** A fresh brand (so its report starts empty) with two offers and two partners. */
    async function brandWithTraffic(name: string) {
      const { apiKey: key } = await env.createBrand(name);
      const offer = async (revenueCents: number, payoutCents: number) =>
        (
          await env.request('POST', '/api/v1/offers', {
            key,
            body: { name: 'O', destinationUrl: 'https://o.example/', revenueCents, payoutCents },
          })
        ).body.id as string;
      const partner = async () =>
        (await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } })).body
          .id as string;
      const brand = {
        key,
        offer1: await offer(1000, 300),
        offer2: await offer(5000, 2000),
        p1: await partner(),
        p2: await partner(),
      };
      const record = async (at: string, offerId = brand.offer1, partnerId = brand.p1) => {
        env.clock.set(Date.parse(at));
        const res = await env.request('POST', '/api/v1/conversions', { key, body: { offerId, partnerId } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.body.id as string;
      };
      const decide = async (id: string, decision: 'approve' | 'reject') => {
        const res = await env.request('POST', `/api/v1/conversions/${id}/${decision}`, { key, body: {} });
        assert.equal(res.status, 200);
      };
      const report = async (query: string) => {
        const res = await env.request('GET', `/api/v1/reports?${query}`, { key });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body;
      };
      return { ...brand, record, decide, report };
    }

    it('totals approved, pending and rejected, with revenue and payout over pending + approved', async () => {
      const b = await brandWithTraffic('Totals');
      await b.decide(await b.record('2026-11-21T09:00:00Z'), 'approve');
      await b.record('2026-11-21T10:00:00Z');
      await b.decide(await b.record('2026-11-21T11:00:00Z'), 'reject');
      await b.record('2026-11-21T12:00:00Z', b.offer2);
      const res = await b.report('from=2026-11-21&to=2026-11-21');
      assert.equal(res.from, '2026-11-21');
      assert.equal(res.to, '2026-11-21');
      assert.deepEqual(res.groupBy, []);
      const expected = metrics({ approved: 1, pending: 2, rejected: 1, revenue: 7000, payout: 2600 });
      assert.deepEqual(res.totals, expected);
      assert.equal(res.totals.profitCents, 4400);
      assert.deepEqual(res.data, [expected]);
    });

    it('takes a conversion out of revenue and payout when it is rejected', async () => {
      const b = await brandWithTraffic('Rejection');
      const id = await b.record('2026-11-21T09:00:00Z', b.offer2);
      await b.record('2026-11-21T09:30:00Z');
      const query = 'from=2026-11-21&to=2026-11-21';
      assert.deepEqual((await b.report(query)).totals, metrics({ pending: 2, revenue: 6000, payout: 2300 }));
      await b.decide(id, 'reject');
      assert.deepEqual(
        (await b.report(query)).totals,
        metrics({ pending: 1, rejected: 1, revenue: 1000, payout: 300 }),
      );
    });

    it('reports zero conversionRate and epcCents when there are no clicks', async () => {
      const b = await brandWithTraffic('No Clicks');
      await b.decide(await b.record('2026-11-21T09:00:00Z', b.offer2), 'approve');
      const { totals } = await b.report('from=2026-11-21&to=2026-11-21');
      assert.equal(totals.clicks, 0);
      assert.equal(totals.conversions, 1);
      assert.equal(totals.conversionRate, 0);
      assert.equal(totals.epcCents, 0);
    });

    it('rounds epcCents half up from the exact quotient: 41 ¢ over 40 clicks is 1.03, as 67 ¢ over 40 is 1.68', async () => {
      const { apiKey: key } = await env.createBrand('EPC');
      const partnerId = (await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@e.com' } }))
        .body.id;
      env.clock.set(Date.parse('2026-11-21T09:00:00Z'));
      const epcOf: Record<number, number> = {};
      for (const payoutCents of [41, 67]) {
        const offerId = (
          await env.request('POST', '/api/v1/offers', {
            key,
            body: { name: 'O', destinationUrl: 'https://o.example/', payoutCents },
          })
        ).body.id;
        for (let i = 0; i < 40; i++) {
          const click = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}` });
          assert.equal(click.statusCode, 302);
        }
        const conversion = await env.request('POST', '/api/v1/conversions', { key, body: { offerId, partnerId } });
        assert.equal(conversion.status, 201);
        const res = await env.request('GET', `/api/v1/reports?from=2026-11-21&to=2026-11-21&offerId=${offerId}`, {
          key,
        });
        assert.deepEqual([res.body.totals.clicks, res.body.totals.payoutCents], [40, payoutCents]);
        epcOf[payoutCents] = res.body.totals.epcCents;
      }
      // 41 / 40 = 1.025 and 67 / 40 = 1.675, both exact halves.
      assert.deepEqual(epcOf, { 41: 1.03, 67: 1.68 });
    });

    it('groups by day, listing only days with activity, oldest first', async () => {
      const b = await brandWithTraffic('Days');
      await b.record('2026-11-20T23:59:59.999Z');
      await b.decide(await b.record('2026-11-21T00:00:00Z'), 'approve');
      await b.record('2026-11-21T15:00:00Z');
      await b.record('2026-11-23T08:00:00Z', b.offer2);
      await b.record('2026-11-24T08:00:00Z'); // after `to`
      const res = await b.report('from=2026-11-20&to=2026-11-23&groupBy=day');
      assert.deepEqual(res.groupBy, ['day']);
      assert.deepEqual(res.data, [
        { day: '2026-11-20', ...metrics({ pending: 1, revenue: 1000, payout: 300 }) },
        { day: '2026-11-21', ...metrics({ pending: 1, approved: 1, revenue: 2000, payout: 600 }) },
        { day: '2026-11-23', ...metrics({ pending: 1, revenue: 5000, payout: 2000 }) },
      ]);
      assert.deepEqual(res.totals, metrics({ pending: 3, approved: 1, revenue: 8000, payout: 2900 }));
    });

    it('groups by week, keyed by the Monday that starts it', async () => {
      const b = await brandWithTraffic('Weeks');
      await b.record('2026-11-16T08:00:00Z'); // Monday
      await b.record('2026-11-22T20:00:00Z'); // Sunday of the same week
      await b.record('2026-11-23T08:00:00Z'); // next Monday
      const res = await b.report('from=2026-11-16&to=2026-11-29&groupBy=week');
      assert.deepEqual(
        res.data.map((r: { week: string; conversions: number }) => [r.week, r.conversions]),
        [
          ['2026-11-16', 2],
          ['2026-11-23', 1],
        ],
      );
      assert.deepEqual(Object.keys(res.data[0]).sort(), ['week', ...METRIC_KEYS].sort());
    });

    it('groups by month', async () => {
      const b = await brandWithTraffic('Months');
      await b.record('2026-11-30T12:00:00Z');
      await b.record('2026-12-01T12:00:00Z');
      await b.record('2026-12-31T12:00:00Z', b.offer2);
      const res = await b.report('from=2026-11-01&to=2026-12-31&groupBy=month');
      assert.deepEqual(res.data, [
        { month: '2026-11', ...metrics({ pending: 1, revenue: 1000, payout: 300 }) },
        { month: '2026-12', ...metrics({ pending: 2, revenue: 6000, payout: 2300 }) },
      ]);
    });

    it('groups by offer and by partner', async () => {
      const b = await brandWithTraffic('Offers Partners');
      await b.record('2026-11-21T09:00:00Z', b.offer1, b.p1);
      await b.record('2026-11-21T10:00:00Z', b.offer2, b.p1);
      await b.record('2026-11-21T11:00:00Z', b.offer2, b.p2);
      const byOffer = await b.report('from=2026-11-21&to=2026-11-21&groupBy=offer');
      const offerRows = Object.fromEntries(byOffer.data.map((r: { offerId: string }) => [r.offerId, r]));
      assert.equal(byOffer.data.length, 2);
      assert.deepEqual(offerRows[b.offer1], {
        offerId: b.offer1,
        ...metrics({ pending: 1, revenue: 1000, payout: 300 }),
      });
      assert.deepEqual(offerRows[b.offer2], {
        offerId: b.offer2,
        ...metrics({ pending: 2, revenue: 10000, payout: 4000 }),
      });
      const byPartner = await b.report('from=2026-11-21&to=2026-11-21&groupBy=partner');
      const partnerRows = Object.fromEntries(byPartner.data.map((r: { partnerId: string }) => [r.partnerId, r]));
      assert.equal(byPartner.data.length, 2);
      assert.equal(partnerRows[b.p1].conversions, 2);
      assert.equal(partnerRows[b.p1].revenueCents, 6000);
      assert.equal(partnerRows[b.p2].conversions, 1);
      assert.equal(partnerRows[b.p2].revenueCents, 5000);
    });

    it('groups by day and offer together', async () => {
      const b = await brandWithTraffic('Day Offer');
      await b.record('2026-11-20T09:00:00Z', b.offer1);
      await b.record('2026-11-21T09:00:00Z', b.offer1);
      await b.decide(await b.record('2026-11-21T10:00:00Z', b.offer2), 'approve');
      await b.record('2026-11-21T11:00:00Z', b.offer1);
      const res = await b.report('from=2026-11-20&to=2026-11-21&groupBy=day,offer');
      assert.deepEqual(res.groupBy, ['day', 'offer']);
      const rows = res.data.map((r: { day: string; offerId: string; pending: number; approved: number }) => [
        r.day,
        r.offerId,
        r.pending,
        r.approved,
      ]);
      assert.deepEqual(
        rows.sort(),
        [
          ['2026-11-20', b.offer1, 1, 0],
          ['2026-11-21', b.offer1, 2, 0],
          ['2026-11-21', b.offer2, 0, 1],
        ].sort(),
      );
      assert.deepEqual(Object.keys(res.data[0]).sort(), ['day', 'offerId', ...METRIC_KEYS].sort());
    });

    it('filters by offerId and by partnerId', async () => {
      const b = await brandWithTraffic('Filters');
      await b.record('2026-11-21T09:00:00Z', b.offer1, b.p1);
      await b.record('2026-11-21T10:00:00Z', b.offer2, b.p1);
      await b.record('2026-11-21T11:00:00Z', b.offer2, b.p2);
      const range = 'from=2026-11-21&to=2026-11-21';
      assert.equal((await b.report(`${range}&offerId=${b.offer2}`)).totals.conversions, 2);
      assert.equal((await b.report(`${range}&partnerId=${b.p1}`)).totals.conversions, 2);
      const both = await b.report(`${range}&offerId=${b.offer2}&partnerId=${b.p2}`);
      assert.deepEqual(both.totals, metrics({ pending: 1, revenue: 5000, payout: 2000 }));
    });

    it("counts days in the brand's time zone", async () => {
      const b = await brandWithTraffic('New York');
      const patched = await env.request('PATCH', '/api/v1/brand', {
        key: b.key,
        body: { timezone: 'America/New_York' },
      });
      assert.equal(patched.body.timezone, 'America/New_York');
      await b.record('2026-11-21T03:00:00Z'); // 22:00 on the 20th in New York
      const res = await b.report('from=2026-11-20&to=2026-11-21&groupBy=day');
      assert.deepEqual(
        res.data.map((r: { day: string; conversions: number }) => [r.day, r.conversions]),
        [['2026-11-20', 1]],
      );
      assert.equal((await b.report('from=2026-11-21&to=2026-11-21')).totals.conversions, 0);
    });

    it("counts only the caller brand's conversions", async () => {
      const mine = await brandWithTraffic('Mine');
      const theirs = await brandWithTraffic('Theirs');
      await mine.record('2026-11-21T09:00:00Z');
      await theirs.record('2026-11-21T09:00:00Z');
      await theirs.record('2026-11-21T10:00:00Z');
      assert.equal((await mine.report('from=2026-11-21&to=2026-11-21')).totals.conversions, 1);
      // Another brand's offer is no offer of this brand: 422 naming the filter, not a report of zeros.
      const foreignFilter = await env.request(
        'GET',
        `/api/v1/reports?from=2026-11-21&to=2026-11-21&offerId=${theirs.offer1}`,
        {
          key: mine.key,
        },
      );
      const error = expectError(foreignFilter, 422, 'validation_error');
      assert.deepEqual(error.details, [{ path: 'query.offerId', message: 'no offer with this id' }]);
    });

    it('takes a range of up to 731 days, at the end of the calendar too', async () => {
      for (const query of [
        'from=2024-11-21&to=2026-11-21',
        'from=9999-12-31&to=9999-12-31',
        'from=9998-01-01&to=9999-12-31',
      ]) {
        const res = await env.request('GET', `/api/v1/reports?${query}`);
        assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      }
    });

    it('shows nothing of other days for a range in the last days of 9999, folded or not, in JSON and CSV', async () => {
      const b = await brandWithTraffic('End Of Calendar');
      await b.record('2026-11-28T09:00:00Z');
      await b.record('2026-11-28T10:00:00Z', b.offer2);
      const empty = metrics({});
      for (const folded of [false, true]) {
        if (folded) await foldFacts(env.ctx);
        // The rollups (no grouping, one attribute, the pair rollups) and the facts (sub1 with an offer and a partner).
        for (const groupBy of ['', 'country', 'sub1', 'country,os', 'offer,partner,sub1']) {
          for (const [from, to] of [
            ['9999-12-28', '9999-12-31'],
            ['9999-12-31', '9999-12-31'],
            ['9999-12-20', '9999-12-31'],
            ['9998-12-31', '9999-12-31'],
          ]) {
            const query = `from=${from}&to=${to}&groupBy=${groupBy}`;
            const res = await b.report(query);
            assert.deepEqual([res.data, res.totals], [[], empty], `${query} (folded: ${folded})`);
            const csv = await env.request('GET', `/api/v1/reports?${query}&format=csv`, { key: b.key });
            assert.equal(String(csv.body).trim().split('\r\n').length, 1, `${query} CSV: ${csv.body}`);
          }
        }
        assert.equal((await b.report('from=2026-11-28&to=2026-11-28')).totals.conversions, 2);
      }
    });

    it('says the 731-day limit where a client reads it: the 422 message and the OpenAPI parameters', async () => {
      const error = expectError(
        await env.request('GET', '/api/v1/reports?from=2024-11-19&to=2026-11-21'),
        422,
        'validation_error',
      );
      assert.deepEqual(error.details, [{ path: 'query.to', message: 'may be at most 731 days after from' }]);
      const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
      const parameters = doc.paths['/api/v1/reports'].get.parameters as Array<{ name: string; description?: string }>;
      for (const name of ['from', 'to']) {
        const description = parameters.find((p) => p.name === name)?.description ?? '';
        assert.match(description, /`to` may be at most 731 days after `from`/, name);
      }
    });

    it('lists every problem of a report query in one 422: the schema’s, groupBy, days and filters', async () => {
      const cases: Array<[string, string[]]> = [
        ['groupBy=foo&country=XX', ['query.country', 'query.groupBy']],
        ['country=XX&from=2026-02-30', ['query.country', 'query.from']],
        [
          'groupBy=foo&country=XX&from=2026-02-30&hour=99',
          ['query.country', 'query.from', 'query.groupBy', 'query.hour'],
        ],
        [
          'groupBy=day,week&from=2026-11-22&to=2026-11-21&deviceType=phone&planet=mars',
          ['query.deviceType', 'query.from', 'query.groupBy', 'query.planet'],
        ],
        // A `to` the schema refuses is not compared with `from`.
        ['from=2026-12-01&to=yesterday&country=XX', ['query.country', 'query.to']],
      ];
      for (const [query, paths] of cases) {
        const error = expectError(await env.request('GET', `/api/v1/reports?${query}`), 422, 'validation_error');
        assert.deepEqual(error.details?.map((d) => d.path).sort(), paths, query);
        for (const path of paths) assert.match(error.message, new RegExp(`${path.replace('.', '\\.')}: `), query);
      }
      // Still at most 100, however many parameters are unknown.
      const unknown = Array.from({ length: 120 }, (_, i) => `p${i}=1`).join('&');
      const many = expectError(
        await env.request('GET', `/api/v1/reports?groupBy=foo&${unknown}`),
        422,
        'validation_error',
      );
      assert.equal(many.details?.length, 100);
    });

    it('refuses an empty filter value from any caller, which the rollups and the facts would match differently', async () => {
      const { id } = await env.createBrand('Empty Filter');
      for (const groupBy of ['sub1', 'sub1,country']) {
        await assert.rejects(buildReport(env.ctx, id, { groupBy, sub1: '' }), (error: unknown) => {
          assert.ok(error instanceof InvalidError);
          assert.deepEqual(
            error.problems.map((p) => p.path),
            ['query.sub1'],
          );
          return true;
        });
      }
    });

    it('answers 422 for an unknown groupBy, from after to, or a from that is not a date', async () => {
      const bad: Array<[string, string]> = [
        ['from=2026-11-01&to=2026-11-30&groupBy=planet', 'query.groupBy'],
        ['from=2026-11-01&to=2026-11-30&groupBy=day,offer,partner,country', 'query.groupBy'],
        ['from=2026-11-01&to=2026-11-30&groupBy=day,week', 'query.groupBy'],
        ['from=2026-11-22&to=2026-11-21', 'query.from'],
        ['from=yesterday&to=2026-11-21', 'query.from'],
        ['from=2026-02-30&to=2026-03-05', 'query.from'],
        ['from=2024-11-19&to=2026-11-21', 'query.to'],
      ];
      for (const [query, path] of bad) {
        const error = expectError(await env.request('GET', `/api/v1/reports?${query}`), 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          [path],
          query,
        );
      }
    });
  });
}
