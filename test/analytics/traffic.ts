/**
 * Random traffic for the report tests, and the reports it should give: random clicks and
 * conversions go in over HTTP, and the expected rows are summed here from what GET /clicks
 * and GET /conversions list (days and hours worked out with Intl, not with the service's
 * code).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import type { JsonBody, TestEnv } from '../helpers.js';

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
/** Values the filters pick from: each occurs in the traffic above (or is plausible). */
export const FILTER_VALUES: Record<string, string[]> = {
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

const subs = fc.array(fc.constantFrom(...SUB_VALUES), { minLength: 5, maxLength: 5 });

/** Traffic over `minutes` minutes from a start: up to 20 clicks and 12 conversions, folded never, midway or at the end. */
export function trafficArb(minutes: number) {
  const clickArb = fc.record({
    offer: fc.nat(1),
    partner: fc.nat(1),
    ua: fc.nat(USER_AGENTS.length - 1),
    ip: fc.nat(IPS.length - 1),
    referer: fc.nat(REFERERS.length - 1),
    subs,
    minute: fc.nat(minutes),
  });
  const conversionArb = fc.record({
    click: fc.option(fc.nat(100), { nil: null }),
    offer: fc.nat(1),
    partner: fc.nat(1),
    subs,
    currency: fc.constantFrom(null, 'GBP'),
    revenue: fc.nat(5000),
    payout: fc.nat(2000),
    minute: fc.nat(minutes),
    decision: fc.constantFrom('none', 'approve', 'reject'),
  });
  return fc.record({
    timezone: fc.constantFrom('UTC', 'America/New_York', 'Asia/Kolkata'),
    clicks: fc.array(clickArb, { minLength: 1, maxLength: 20 }),
    conversions: fc.array(conversionArb, { maxLength: 12 }),
    fold: fc.constantFrom('never', 'midway', 'end'),
  });
}
export type Traffic = ReturnType<typeof trafficArb> extends fc.Arbitrary<infer T> ? T : never;

type Row = Record<string, string | number | null>;

/** One click or conversion as the lists show it: its keys, currency and report counters. */
export interface ListedFact {
  attrs: Row;
  currency: string;
  sums: number[];
}

export interface LoadedTraffic {
  key: string;
  offers: Array<{ id: string; currency: string }>;
  partners: string[];
  facts: ListedFact[];
}

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

async function listAll(env: TestEnv, key: string, path: string): Promise<JsonBody[]> {
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

/**
 * A new brand with two offers (EUR, USD) and two partners, the traffic sent to it from
 * `start` (epoch ms) over HTTP, and what its lists say, as facts to sum.
 */
export async function loadTraffic(env: TestEnv, name: string, data: Traffic, start: number): Promise<LoadedTraffic> {
  const { apiKey: key } = await env.createBrand(name, { timezone: data.timezone });
  const offers: Array<{ id: string; currency: string }> = [];
  for (const currency of ['EUR', 'USD']) {
    const res = await env.request('POST', '/api/v1/offers', {
      key,
      body: { name: currency, destinationUrl: 'https://o.example/', currency, revenueCents: 900, payoutCents: 250 },
    });
    offers.push({ id: res.body.id, currency });
  }
  const partners: string[] = [];
  for (const partner of ['P1', 'P2']) {
    const res = await env.request('POST', '/api/v1/partners', { key, body: { name: partner, email: 'p@example.com' } });
    partners.push(res.body.id);
  }
  const half = Math.floor(data.clicks.length / 2);
  for (const [i, c] of data.clicks.entries()) {
    if (data.fold === 'midway' && i === half) await foldFacts(env.ctx);
    env.clock.set(start + c.minute * 60_000);
    const query = c.subs
      .map((s, n) => (s ? `sub${n + 1}=${s}` : ''))
      .filter(Boolean)
      .join('&');
    const headers: Record<string, string> = { 'x-forwarded-for': IPS[c.ip] as string };
    if (USER_AGENTS[c.ua]) headers['user-agent'] = USER_AGENTS[c.ua] as string;
    if (REFERERS[c.referer]) headers.referer = REFERERS[c.referer] as string;
    const res = await env.app.inject({
      method: 'GET',
      url: `/t/${offers[c.offer]?.id}/${partners[c.partner]}?${query}`,
      headers,
    });
    assert.equal(res.statusCode, 302);
  }
  const storedClicks = await listAll(env, key, '/api/v1/clicks');
  for (const c of data.conversions) {
    env.clock.set(start + c.minute * 60_000);
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
      const decided = await env.request('POST', `/api/v1/conversions/${res.body.id}/${c.decision}`, { key, body: {} });
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
  const facts: ListedFact[] = [
    ...storedClicks.map((c) => ({
      attrs: attrs(c, Date.parse(c.createdAt)),
      currency: currencyOf.get(c.offerId) as string,
      sums: [1, 0, 0, 0, 0, 0],
    })),
    ...(await listAll(env, key, '/api/v1/conversions')).map((c) => {
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
  return { key, offers, partners, facts };
}

function mondayOf(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
  return date.toISOString().slice(0, 10);
}

/** The report the service should give, summed from the listed clicks and conversions. */
export function expectedReport(
  facts: ListedFact[],
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
      conversionRate: clicks > 0 ? conversions / clicks : 0,
      epcCents: clicks > 0 ? Math.round((payout / clicks) * 100) / 100 : 0,
    };
  });
}

export const canonical = (rows: Row[]) =>
  rows.map((r) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))).sort();

/**
 * Asks for the report `groupBy` + `filters` (attribute names, or offerId / partnerId) over
 * `from`…`to`, and checks its rows and per-currency totals against the traffic's.
 */
export async function checkReport(
  env: TestEnv,
  traffic: LoadedTraffic,
  groupBy: string[],
  filters: Record<string, string>,
  range: { from: string; to: string },
): Promise<void> {
  const params = new URLSearchParams({ ...range, ...filters });
  if (groupBy.length > 0) params.set('groupBy', groupBy.join(','));
  const res = await env.request('GET', `/api/v1/reports?${params}`, { key: traffic.key });
  assert.equal(res.status, 200, `${params}: ${JSON.stringify(res.body)}`);
  const expected = expectedReport(traffic.facts, groupBy, filters, range);
  assert.deepEqual(canonical(res.body.data), canonical(expected as Row[]), String(params));
  const totals = expectedReport(traffic.facts, [], filters, range);
  if (totals.length > 0) assert.deepEqual(canonical(res.body.totalsByCurrency), canonical(totals as Row[]));
}
