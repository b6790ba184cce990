/**
 * The span ranges a report reads: the whole weeks inside its days as week rows and the days
 * around them as day rows must cover every day of the range exactly once, and nothing else —
 * checked against days counted one by one with Date, for ranges anywhere from year 0 (the
 * dashboard's "since the beginning") to 9999.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DAY_SPAN, spanRanges, WEEK_SPAN, weekOf } from '../../src/modules/analytics/grains.js';

const DAY_MS = 86_400_000;
/** Milliseconds of 0000-01-01 and 9999-12-31, UTC (Date.UTC would read year 0 as 1900). */
const FIRST = new Date('0000-01-01T00:00:00Z').getTime();
const LAST = new Date('9999-12-31T00:00:00Z').getTime();

const dayOf = (ms: number) => {
  const text = new Date(ms).toISOString();
  return text.slice(0, 10);
};

/** Every day a list of span ranges covers, one entry per row day it stands for. */
function coveredDays(ranges: ReturnType<typeof spanRanges>): string[] {
  const days: string[] = [];
  for (const { span, from, to } of ranges) {
    for (let ms = Date.parse(`${from}T00:00:00Z`); ms <= Date.parse(`${to}T00:00:00Z`); ms += span * DAY_MS) {
      if (span === WEEK_SPAN) {
        assert.equal(new Date(ms).getUTCDay(), 1, `week row ${dayOf(ms)} starts on a Monday`);
        for (let i = 0; i < 7; i++) days.push(dayOf(ms + i * DAY_MS));
      } else days.push(dayOf(ms));
    }
  }
  return days;
}

describe('span ranges of a report', () => {
  it('cover each day of the range exactly once, with whole weeks as week rows', () => {
    fc.assert(
      fc.property(
        // Starts anywhere up to 9999-12-31, ends no later: the last week of 9999 is where the
        // Monday after `from` falls in year 10000.
        fc.integer({ min: Math.ceil(FIRST / DAY_MS), max: Math.floor(LAST / DAY_MS) }),
        fc.nat(800),
        (start, asked) => {
          const length = Math.min(asked, Math.floor(LAST / DAY_MS) - start);
          const from = dayOf(start * DAY_MS);
          const to = dayOf((start + length) * DAY_MS);
          const expected = Array.from({ length: length + 1 }, (_, i) => dayOf((start + i) * DAY_MS));
          const ranges = spanRanges(from, to);
          assert.deepEqual(coveredDays(ranges), expected, `${from}…${to}: ${JSON.stringify(ranges)}`);
          // Whole weeks are read as weeks: at most six days on either side of them.
          const dayRows = ranges.filter((r) => r.span === DAY_SPAN);
          const weeks = ranges.filter((r) => r.span === WEEK_SPAN);
          if (length >= 13) assert.equal(weeks.length, 1);
          for (const r of dayRows) {
            const days = (Date.parse(`${r.to}T00:00:00Z`) - Date.parse(`${r.from}T00:00:00Z`)) / DAY_MS + 1;
            assert.ok(weeks.length === 0 || days <= 6, `${r.from}…${r.to} beside whole weeks`);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads any range in the last days of 9999 as those days only', () => {
    for (let day = 20; day <= 31; day++) {
      for (let last = day; last <= 31; last++) {
        const ranges = spanRanges(`9999-12-${day}`, `9999-12-${last}`);
        const expected = Array.from({ length: last - day + 1 }, (_, i) => `9999-12-${day + i}`);
        assert.deepEqual(coveredDays(ranges), expected, JSON.stringify(ranges));
      }
    }
  });

  it('reads "since the beginning" (0000-01-01 to 9999-12-31) as weeks with a few days around them', () => {
    const ranges = spanRanges('0000-01-01', '9999-12-31');
    assert.deepEqual(
      ranges.map((r) => r.span),
      [DAY_SPAN, WEEK_SPAN, DAY_SPAN],
    );
    assert.equal(ranges[0]?.from, '0000-01-01');
    assert.equal(ranges.at(-1)?.to, '9999-12-31');
  });

  it('keys a week by its Monday', () => {
    fc.assert(
      fc.property(fc.integer({ min: Math.ceil(FIRST / DAY_MS) + 7, max: Math.floor(LAST / DAY_MS) }), (n) => {
        const day = dayOf(n * DAY_MS);
        const monday = Date.parse(`${weekOf(day)}T00:00:00Z`);
        assert.equal(new Date(monday).getUTCDay(), 1);
        assert.ok(monday <= n * DAY_MS && n * DAY_MS - monday < 7 * DAY_MS, `${day} → ${weekOf(day)}`);
      }),
    );
  });
});
