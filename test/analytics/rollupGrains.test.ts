/**
 * Reports read from every grain of the rollups (grains.ts): traffic spread over four weeks,
 * and ranges of up to four weeks that start and end on any weekday, so a report without a
 * time unit reads whole weeks from the week rows and the days around them from the day rows;
 * one attribute at most with offers and partners grouped by or filtered on (levels 0–3), or
 * a pair of fixed-vocabulary attributes. Each must match the independent aggregation of
 * traffic.ts — before folding, after folding, and with the facts folded half-way.
 */
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ATTRIBUTES, PAIRED_ATTRIBUTES } from '../../src/modules/analytics/dimensions.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { checkReport, FILTER_VALUES, loadTraffic, trafficArb } from './traffic.js';

/** A Wednesday: the traffic's weeks do not start with it. */
const START = Date.parse('2026-11-04T06:00:00Z');
const MINUTES = 26 * 24 * 60;
const DAY_MS = 86_400_000;

const use = fc.constantFrom('none', 'group', 'filter');
const rangeArb = fc.record({ start: fc.integer({ min: -2, max: 26 }), days: fc.nat(27) });
/** Mostly no time unit: those are the reports that read weeks. */
const timeArb = fc.constantFrom(null, null, null, 'day', 'week', 'month');

const singleArb = fc.record({
  attribute: fc.option(fc.constantFrom(...ATTRIBUTES), { nil: null }),
  attributeUse: fc.constantFrom('group', 'filter'),
  offer: use,
  partner: use,
  time: timeArb,
  pick: fc.nat(3),
  range: rangeArb,
});
const pairArb = fc.record({
  pair: fc.shuffledSubarray([...PAIRED_ATTRIBUTES], { minLength: 2, maxLength: 2 }),
  filtered: fc.constantFrom([false, false], [false, true], [true, false], [true, true]),
  time: timeArb,
  pick: fc.nat(3),
  range: rangeArb,
});

const dayAfterStart = (n: number) => new Date(START + n * DAY_MS).toISOString().slice(0, 10);

for (const dialect of testedDialects()) {
  describe(`reports over weeks and levels of the rollups (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
    });
    after(() => env.close());

    it('match an independent aggregation over ranges of whole weeks and loose days', async () => {
      let brandNo = 0;
      await fc.assert(
        fc.asyncProperty(
          trafficArb(MINUTES),
          fc.array(singleArb, { minLength: 8, maxLength: 8 }),
          fc.array(pairArb, { minLength: 4, maxLength: 4 }),
          async (data, singles, pairs) => {
            const traffic = await loadTraffic(env, `Grains ${++brandNo}`, data, START);
            const filterValue = (attribute: string, pick: number) => {
              const values = FILTER_VALUES[attribute] as string[];
              return values[pick % values.length] as string;
            };
            const rangeOf = ({ start, days }: { start: number; days: number }) => ({
              from: dayAfterStart(start),
              to: dayAfterStart(start + days),
            });
            for (const q of singles) {
              const groupBy: string[] = q.time ? [q.time] : [];
              const filters: Record<string, string> = {};
              if (q.offer === 'group') groupBy.push('offer');
              if (q.offer === 'filter') filters.offerId = traffic.offers[q.pick % 2]?.id as string;
              if (q.partner === 'group') groupBy.push('partner');
              if (q.partner === 'filter') filters.partnerId = traffic.partners[(q.pick >> 1) % 2] as string;
              if (q.attribute && q.attributeUse === 'group') groupBy.push(q.attribute);
              if (q.attribute && q.attributeUse === 'filter') filters[q.attribute] = filterValue(q.attribute, q.pick);
              await checkReport(env, traffic, groupBy.slice(0, 3), filters, rangeOf(q.range));
            }
            for (const q of pairs) {
              const groupBy: string[] = q.time ? [q.time] : [];
              const filters: Record<string, string> = {};
              q.pair.forEach((attribute, i) => {
                if (q.filtered[i]) filters[attribute] = filterValue(attribute, q.pick);
                else groupBy.push(attribute);
              });
              await checkReport(env, traffic, groupBy, filters, rangeOf(q.range));
            }
          },
        ),
        { numRuns: 8 },
      );
    });
  });
}
