/**
 * Reports by every dimension and filter, checked against an independent aggregation
 * (traffic.ts): random clicks and conversions go in over HTTP, and every random report must
 * match what the clicks and conversions lists add up to — before folding, after folding, and
 * with the facts folded half-way.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { Problem } from '../../src/errors.js';
import { ATTRIBUTES, PAIRED_ATTRIBUTES } from '../../src/modules/analytics/dimensions.js';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { dimensionFilters } from '../../src/modules/reports/filters.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { checkReport, FILTER_VALUES, loadTraffic, trafficArb } from './traffic.js';

const START = Date.parse('2026-11-20T00:00:00Z');
const MINUTES = 3 * 24 * 60;

const queryArb = fc
  .record({
    time: fc.constantFrom(null, 'day', 'week', 'month'),
    keys: fc.shuffledSubarray(['offer', 'partner', ...ATTRIBUTES], { maxLength: 3 }),
    filters: fc.shuffledSubarray([...ATTRIBUTES], { maxLength: 2 }),
    filterPick: fc.nat(3),
    offerFilter: fc.constantFrom(null, 0, 1),
    partnerFilter: fc.constantFrom(null, 0, 1),
    fromDay: fc.integer({ min: 19, max: 22 }),
    days: fc.nat(3),
  })
  .map((q) => ({ ...q, groupBy: [...(q.time ? [q.time] : []), ...q.keys].slice(0, 3) }));
/**
 * Reports over exactly two fixed-vocabulary attributes, each grouped by or filtered on, with
 * or without a time unit: the ones answered from the pair rollups, which random queries
 * above reach only now and then.
 */
const pairQueryArb = fc
  .record({
    time: fc.constantFrom(null, 'day', 'week', 'month'),
    pair: fc.shuffledSubarray([...PAIRED_ATTRIBUTES], { minLength: 2, maxLength: 2 }),
    // Which of the two are filters rather than groupings: none, the second, the first, both.
    filtered: fc.constantFrom([false, false], [false, true], [true, false], [true, true]),
    filterPick: fc.nat(3),
    fromDay: fc.integer({ min: 19, max: 22 }),
    days: fc.nat(3),
  })
  .map((q) => ({
    ...q,
    keys: q.pair.filter((_, i) => !q.filtered[i]),
    filters: q.pair.filter((_, i) => q.filtered[i]),
    offerFilter: null,
    partnerFilter: null,
  }))
  .map((q) => ({ ...q, groupBy: [...(q.time ? [q.time] : []), ...q.keys] }));

/** Every country code of the enrichment data's ranges (countries.ts reads the same files). */
function enrichmentCountryCodes(): Set<string> {
  const dir = path.dirname(
    createRequire(import.meta.url).resolve('@ip-location-db/geo-whois-asn-country/package.json'),
  );
  const codes = new Set<string>();
  for (const file of ['geo-whois-asn-country-ipv4-num.csv', 'geo-whois-asn-country-ipv6.csv']) {
    for (const line of readFileSync(path.join(dir, file), 'latin1').split('\n')) {
      const code = line.slice(line.lastIndexOf(',') + 1).trim();
      if (code) codes.add(code);
    }
  }
  return codes;
}

describe('the country filter', () => {
  it('accepts every code the enrichment data can store a click with, in any case', () => {
    const data = enrichmentCountryCodes();
    assert.ok(data.size >= 249, `the data lists ${data.size} codes`);
    for (const code of data) {
      const problems: Problem[] = [];
      assert.deepEqual(dimensionFilters({ country: code.toLowerCase() }, problems), { country: code }, code);
      assert.deepEqual(problems, [], code);
    }
  });
});

for (const dialect of testedDialects()) {
  describe(`report dimensions and filters (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
    });
    after(() => env.close());

    it('matches an independent aggregation for random data, groupings and filters', async () => {
      let brandNo = 0;
      await fc.assert(
        fc.asyncProperty(
          trafficArb(MINUTES),
          fc.array(queryArb, { minLength: 8, maxLength: 8 }),
          fc.array(pairQueryArb, { minLength: 4, maxLength: 4 }),
          async (data, randomQueries, pairQueries) => {
            const traffic = await loadTraffic(env, `Dimensions ${++brandNo}`, data, START);
            for (const q of [...randomQueries, ...pairQueries]) {
              const from = `2026-11-${q.fromDay}`;
              const to = `2026-11-${Math.min(q.fromDay + q.days, 23)}`;
              const filters: Record<string, string> = {};
              for (const name of q.filters) {
                const values = FILTER_VALUES[name] as string[];
                filters[name] = values[q.filterPick % values.length] as string;
              }
              if (q.offerFilter !== null) filters.offerId = traffic.offers[q.offerFilter]?.id as string;
              if (q.partnerFilter !== null) filters.partnerId = traffic.partners[q.partnerFilter] as string;
              await checkReport(env, traffic, q.groupBy, filters, { from, to });
            }
          },
        ),
        { numRuns: 6 },
      );
    });

    it('matches country, deviceType and referrerHost in any case, os and browser exactly', async () => {
      const { apiKey: key } = await env.createBrand('Filter Case');
      const offerId = (
        await env.request('POST', '/api/v1/offers', {
          key,
          body: { name: 'O', destinationUrl: 'https://o.example/', revenueCents: 900, payoutCents: 250 },
        })
      ).body.id;
      const partnerId = (
        await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } })
      ).body.id;
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      for (let i = 0; i < 2; i++) {
        const res = await env.app.inject({
          url: `/t/${offerId}/${partnerId}`,
          headers: {
            'x-forwarded-for': '81.2.69.142',
            'user-agent':
              'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
            referer: 'https://Ref1.Example/landing',
          },
        });
        assert.equal(res.statusCode, 302);
      }
      const [click] = (await env.request('GET', '/api/v1/clicks', { key })).body.data;
      assert.equal(click.referrerHost, 'ref1.example');
      const country = click.country as string;
      assert.match(country, /^[A-Z]{2}$/);
      const clicks = async (filter: string) => {
        const res = await env.request('GET', `/api/v1/reports?from=2026-11-21&to=2026-11-21&${filter}`, { key });
        assert.equal(res.status, 200, `${filter}: ${JSON.stringify(res.body)}`);
        return res.body.totals.clicks;
      };
      for (const folded of [false, true]) {
        if (folded) await foldFacts(env.ctx);
        for (const filter of [
          'deviceType=mobile',
          'deviceType=Mobile',
          'deviceType=MOBILE&groupBy=os',
          `country=${country}`,
          `country=${country.toLowerCase()}`,
          `country=${country.toLowerCase()}&deviceType=Mobile`,
          'referrerHost=ref1.example',
          'referrerHost=REF1.Example',
          'referrerHost=REF1.EXAMPLE&groupBy=sub1',
          'os=iOS',
          'browser=Mobile Safari',
        ]) {
          assert.equal(await clicks(filter), 2, `${filter} (folded: ${folded})`);
        }
        // Free-text names match exactly, as documented.
        for (const filter of ['os=ios', 'browser=mobile safari', 'deviceType=desktop', 'country=JP']) {
          assert.equal(await clicks(filter), 0, `${filter} (folded: ${folded})`);
        }
      }
    });

    it('answers 422 naming each dimension filter outside its vocabulary, all at once', async () => {
      const cases: Array<[string, string[]]> = [
        ['deviceType=phone', ['query.deviceType']],
        ['deviceType=', ['query.deviceType']],
        ['country=XX', ['query.country']],
        ['country=Germany', ['query.country']],
        ['country=DEU', ['query.country']],
        ['referrerHost=https://ref1.example/', ['query.referrerHost']],
        ['referrerHost=ref1.example:8080', ['query.referrerHost']],
        ['referrerHost=not a host', ['query.referrerHost']],
        ['deviceType=phone&country=XX&referrerHost=a/b', ['query.country', 'query.deviceType', 'query.referrerHost']],
      ];
      for (const [query, paths] of cases) {
        const error = expectError(await env.request('GET', `/api/v1/reports?${query}`), 422, 'validation_error');
        assert.deepEqual(error.details?.map((d) => d.path).sort(), paths, query);
      }
      const error = expectError(await env.request('GET', '/api/v1/reports?deviceType=phone'), 422, 'validation_error');
      assert.match(error.message, /"desktop", "mobile", "tablet", "bot", "other"/);
    });

    it('answers 422 for a region code no click is stored with: reserved, withdrawn, groupings, private use', async () => {
      // Intl names each of these (UK "United Kingdom", DD "Germany", EU "European Union", ZZ "Unknown Region").
      for (const code of 'UK uk EU EZ UN ZZ QO XA AA SU YU DD FX TP ZR CS'.split(' ')) {
        const error = expectError(await env.request('GET', `/api/v1/reports?country=${code}`), 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['query.country'],
          code,
        );
        assert.match(error.message, /query\.country: must be an ISO 3166-1 alpha-2 country code/, code);
      }
      const uk = expectError(await env.request('GET', '/api/v1/reports?country=UK'), 422, 'validation_error');
      assert.match(uk.message, /the United Kingdom is GB/);
      // Codes the enrichment data stores clicks with, outside ISO's assigned list too.
      for (const code of ['gb', 'XK', 'AN']) {
        const res = await env.request('GET', `/api/v1/reports?country=${code}`);
        assert.equal(res.status, 200, `${code}: ${JSON.stringify(res.body)}`);
      }
    });

    it('answers 422 naming groupBy for more than three dimensions, or an unknown filter', async () => {
      const tooMany = await env.request('GET', '/api/v1/reports?groupBy=day,country,deviceType,os');
      const error = expectError(tooMany, 422, 'validation_error');
      assert.deepEqual(
        error.details?.map((d) => d.path),
        ['query.groupBy'],
      );
      assert.match(error.message + JSON.stringify(error.details), /at most 3/);
      expectError(await env.request('GET', '/api/v1/reports?planet=mars'), 422, 'validation_error');
      expectError(await env.request('GET', '/api/v1/reports?hour=24'), 422, 'validation_error');
    });
  });
}
