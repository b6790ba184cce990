/**
 * Reports by every dimension and filter, checked against an independent aggregation: random
 * clicks and conversions go in over HTTP, the expected rows are summed here from what
 * GET /clicks and GET /conversions list (days and hours worked out with Intl, not with the
 * service's code), and every random report must match them exactly — before folding, after
 * folding, and with the facts folded half-way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ATTRIBUTES, PAIRED_ATTRIBUTES } from '../../src/modules/analytics/dimensions.js';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { createTestEnv, expectError, type JsonBody, type TestEnv, testedDialects } from '../helpers.js';

const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  '',
];
const IPS = ['8.8.8.8', '81.2.69.142', '2a00:1450:4001::1', '10.0.0.7'];
const REFERERS = ['', 'https://news.example/a', 'https://Blog.Example.org/b?c=d'];
const SUB_VALUES = [null, 'a', 'b'];
const FILTER_VALUES: Record<string, string[]> = {
  country: ['US', 'GB', 'IE'],
  deviceType: ['desktop', 'mobile', 'tablet', 'bot'],
  os: ['Windows', 'iOS'],
  browser: ['Chrome', 'Mobile Safari'],
  referrerHost: ['news.example', 'blog.example.org'],
  sub1: ['a', 'b'],
  sub2: ['a', 'b'],
  sub3: ['a'],
  sub4: ['b'],
  sub5: ['a'],
  hour: ['00', '09', '13', '22'],
};
const START = Date.parse('2026-11-20T00:00:00Z');
const MINUTES = 3 * 24 * 60;

const subs = fc.array(fc.constantFrom(...SUB_VALUES), { minLength: 5, maxLength: 5 });
const clickArb = fc.record({
  offer: fc.nat(1),
  partner: fc.nat(1),
  ua: fc.nat(USER_AGENTS.length - 1),
  ip: fc.nat(IPS.length - 1),
  referer: fc.nat(REFERERS.length - 1),
  subs,
  minute: fc.nat(MINUTES),
});
const conversionArb = fc.record({
  click: fc.option(fc.nat(100), { nil: null }),
  offer: fc.nat(1),
  partner: fc.nat(1),
  subs,
  currency: fc.constantFrom(null, 'GBP'),
  revenue: fc.nat(5000),
  payout: fc.nat(2000),
  minute: fc.nat(MINUTES),
  decision: fc.constantFrom('none', 'approve', 'reject'),
});
const datasetArb = fc.record({
  timezone: fc.constantFrom('UTC', 'America/New_York', 'Asia/Kolkata'),
  clicks: fc.array(clickArb, { minLength: 1, maxLength: 20 }),
  conversions: fc.array(conversionArb, { maxLength: 12 }),
  fold: fc.constantFrom('never', 'midway', 'end'),
});
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

type Row = Record<string, string | number | null>;

function localParts(ms: number, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    })
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  );
  return { day: `${parts.year}-${parts.month}-${parts.day}`, hour: parts.hour as string };
}

function mondayOf(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
  return date.toISOString().slice(0, 10);
}

/** The report the service should give, summed from the listed clicks and conversions. */
function expectedReport(
  facts: Array<{ attrs: Row; currency: string; sums: number[] }>,
  groupBy: string[],
  filters: Record<string, string>,
  range: { from: string; to: string },
) {
  const groups = new Map<string, { keys: Row; sums: number[] }>();
  for (const fact of facts) {
    const day = fact.attrs.day as string;
    if (day < range.from || day > range.to) continue;
    if (Object.entries(filters).some(([k, v]) => fact.attrs[k] !== v)) continue;
    const keys: Row = {};
    for (const key of groupBy) {
      if (key === 'day') keys.day = day;
      else if (key === 'week') keys.week = mondayOf(day);
      else if (key === 'month') keys.month = day.slice(0, 7);
      else if (key === 'offer') keys.offerId = fact.attrs.offerId as string;
      else if (key === 'partner') keys.partnerId = fact.attrs.partnerId as string;
      else keys[key] = fact.attrs[key] ?? null;
    }
    keys.currency = fact.currency;
    const id = JSON.stringify(Object.entries(keys).sort());
    const group = groups.get(id) ?? { keys, sums: [0, 0, 0, 0, 0, 0] };
    fact.sums.forEach((v, i) => {
      group.sums[i] = (group.sums[i] as number) + v;
    });
    groups.set(id, group);
  }
  return [...groups.values()].map(({ keys, sums }) => {
    const [clicks, pending, approved, rejected, revenue, payout] = sums as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const conversions = pending + approved;
    return {
      ...keys,
      clicks,
      conversions,
      approved,
      pending,
      rejected,
      revenueCents: revenue,
      payoutCents: payout,
      profitCents: revenue - payout,
      conversionRate: clicks > 0 ? Math.round((conversions / clicks) * 1e6) / 1e6 : 0,
      epcCents: clicks > 0 ? Math.round((payout / clicks) * 100) / 100 : 0,
    };
  });
}

const canonical = (rows: Row[]) =>
  rows.map((r) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))).sort();

for (const dialect of testedDialects()) {
  describe(`report dimensions and filters (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
    });
    after(() => env.close());

    async function listAll(key: string, path: string): Promise<JsonBody[]> {
      const rows: JsonBody[] = [];
      let cursor: string | null = null;
      do {
        const res = await env.request('GET', `${path}?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key });
        assert.equal(res.status, 200);
        rows.push(...res.body.data);
        cursor = res.body.nextCursor;
      } while (cursor);
      return rows;
    }

    it('matches an independent aggregation for random data, groupings and filters', async () => {
      let brandNo = 0;
      await fc.assert(
        fc.asyncProperty(
          datasetArb,
          fc.array(queryArb, { minLength: 8, maxLength: 8 }),
          fc.array(pairQueryArb, { minLength: 4, maxLength: 4 }),
          async (data, randomQueries, pairQueries) => {
            const queries = [...randomQueries, ...pairQueries];
            const { apiKey: key } = await env.createBrand(`Dimensions ${++brandNo}`, { timezone: data.timezone });
            const offers: Array<{ id: string; currency: string }> = [];
            for (const currency of ['EUR', 'USD']) {
              const res = await env.request('POST', '/api/v1/offers', {
                key,
                body: {
                  name: currency,
                  destinationUrl: 'https://o.example/',
                  currency,
                  revenueCents: 900,
                  payoutCents: 250,
                },
              });
              offers.push({ id: res.body.id, currency });
            }
            const partners: string[] = [];
            for (const name of ['P1', 'P2']) {
              partners.push(
                (await env.request('POST', '/api/v1/partners', { key, body: { name, email: 'p@example.com' } })).body
                  .id,
              );
            }
            const half = Math.floor(data.clicks.length / 2);
            for (const [i, c] of data.clicks.entries()) {
              if (data.fold === 'midway' && i === half) await foldFacts(env.ctx);
              env.clock.set(START + c.minute * 60_000);
              const query = c.subs
                .map((s, n) => (s ? `sub${n + 1}=${s}` : ''))
                .filter(Boolean)
                .join('&');
              const headers: Record<string, string> = { 'x-forwarded-for': IPS[c.ip] as string };
              if (USER_AGENTS[c.ua]) headers['user-agent'] = USER_AGENTS[c.ua] as string;
              if (REFERERS[c.referer]) headers.referer = REFERERS[c.referer] as string;
              const url = `/t/${offers[c.offer]?.id}/${partners[c.partner]}?${query}`;
              const res = await env.app.inject({ method: 'GET', url, headers });
              assert.equal(res.statusCode, 302);
            }
            const storedClicks = await listAll(key, '/api/v1/clicks');
            for (const c of data.conversions) {
              env.clock.set(START + c.minute * 60_000);
              const body: Record<string, unknown> = { revenueCents: c.revenue, payoutCents: c.payout };
              const click = c.click === null ? undefined : storedClicks[c.click % storedClicks.length];
              if (click) body.clickId = click.id;
              else {
                body.offerId = offers[c.offer]?.id;
                body.partnerId = partners[c.partner];
                c.subs.forEach((s, n) => {
                  if (s) body[`sub${n + 1}`] = s;
                });
              }
              if (c.currency) body.currency = c.currency;
              const res = await env.request('POST', '/api/v1/conversions', { key, body });
              assert.equal(res.status, 201, JSON.stringify(res.body));
              if (c.decision !== 'none') {
                const decided = await env.request('POST', `/api/v1/conversions/${res.body.id}/${c.decision}`, {
                  key,
                  body: {},
                });
                assert.equal(decided.status, 200);
              }
            }
            if (data.fold !== 'never') await foldFacts(env.ctx);

            // What the lists say, summed independently.
            const currencyOf = new Map(offers.map((o) => [o.id, o.currency]));
            const attrs = (row: JsonBody, at: number): Row => ({
              ...localParts(at, data.timezone),
              offerId: row.offerId,
              partnerId: row.partnerId,
              country: row.country,
              deviceType: row.deviceType,
              os: row.os,
              browser: row.browser,
              referrerHost: row.referrerHost,
              sub1: row.sub1,
              sub2: row.sub2,
              sub3: row.sub3,
              sub4: row.sub4,
              sub5: row.sub5,
            });
            const facts = [
              ...storedClicks.map((c) => ({
                attrs: attrs(c, Date.parse(c.createdAt)),
                currency: currencyOf.get(c.offerId) as string,
                sums: [1, 0, 0, 0, 0, 0],
              })),
              ...(await listAll(key, '/api/v1/conversions')).map((c) => {
                const counted = c.status === 'rejected' ? 0 : 1;
                return {
                  attrs: attrs(c, Date.parse(c.createdAt)),
                  currency: c.currency as string,
                  sums: [
                    0,
                    c.status === 'pending' ? 1 : 0,
                    c.status === 'approved' ? 1 : 0,
                    c.status === 'rejected' ? 1 : 0,
                    counted * c.revenueCents,
                    counted * c.payoutCents,
                  ],
                };
              }),
            ];

            for (const q of queries) {
              const from = `2026-11-${q.fromDay}`;
              const to = `2026-11-${Math.min(q.fromDay + q.days, 23)}`;
              const filters: Record<string, string> = {};
              for (const name of q.filters) {
                const values = FILTER_VALUES[name] as string[];
                filters[name] = values[q.filterPick % values.length] as string;
              }
              if (q.offerFilter !== null) filters.offerId = offers[q.offerFilter]?.id as string;
              if (q.partnerFilter !== null) filters.partnerId = partners[q.partnerFilter] as string;
              const params = new URLSearchParams({ from, to, ...filters });
              if (q.groupBy.length > 0) params.set('groupBy', q.groupBy.join(','));
              const res = await env.request('GET', `/api/v1/reports?${params}`, { key });
              assert.equal(res.status, 200, `${params}: ${JSON.stringify(res.body)}`);
              const expected = expectedReport(facts, q.groupBy, filters, { from, to });
              assert.deepEqual(canonical(res.body.data), canonical(expected as Row[]), String(params));
              const totals = expectedReport(facts, [], filters, { from, to });
              if (totals.length > 0) assert.deepEqual(canonical(res.body.totalsByCurrency), canonical(totals as Row[]));
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
