/**
 * Reports by every dimension and filter, checked against an independent aggregation
 * (traffic.ts): random clicks and conversions go in over HTTP, and every random report must
 * match what the clicks and conversions lists add up to — before folding, after folding, and
 * with the facts folded half-way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ATTRIBUTES, PAIRED_ATTRIBUTES } from '../../src/modules/analytics/dimensions.js';
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
