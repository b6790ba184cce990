/**
 * Issue #17 benchmark: the dashboard at scale. One brand with 1,000,000 webhook and postback
 * deliveries (500,000 events, one attempt row each delivery that was tried), 1,000,000 clicks
 * (country, device, OS, browser, referrer; ~2% high-risk) and 100,000 conversions over 30
 * days, 20 offers, 500 partners (20 applicants), 5 webhook subscriptions and 40 postback
 * templates; analytics facts for every click and conversion, folded into the rollups as the
 * worker would. Rows are seeded directly: on SQLite one prepared INSERT per table run in one
 * transaction; on PostgreSQL (BENCH_DATABASE_URL or TEST_DATABASE_URL, in a fresh schema,
 * dropped afterwards) multi-row INSERTs. Then the real app serves the database on a port, a
 * dashboard user signs in through the login form, and every page and common filter is
 * fetched 30 times in turn (after warm-up): p50 and p95 per page. Target: p95 <= 50 ms.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { idAt } from '../src/ids.js';
import { rollUpLoadedFacts } from '../src/modules/analytics/bulkFold.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { createUser } from '../src/modules/users/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';
import { freePort, percentile, record } from './lib.js';

const DELIVERIES = 1_000_000;
const EVENTS = DELIVERIES / 2;
const CLICKS = 1_000_000;
const CONVERSIONS = 100_000;
const OFFERS = 20;
const PARTNERS = 500;
const APPLICANTS = 20;
const SUBSCRIPTIONS = 5;
const POSTBACK_TEMPLATES = 40;
const DAYS = 30;
const RUNS = 30;
const WARMUP = 3;
/** Requests timed of a page whose first answer took over ten times the target. */
const SLOW_RUNS = 3;
const TARGET_P95_MS = 50;
const DAY_MS = 86_400_000;
const SPAN_MS = DAYS * DAY_MS;
/** Rows per multi-row INSERT on PostgreSQL (at most 26 columns: 26,000 of 65,535 parameters). */
const PG_ROWS_PER_INSERT = 1000;
const PASSWORD = 'bench dashboard password';
const EMAIL = 'bench@example.com';

const COUNTRIES = 'US,US,US,DE,DE,GB,GB,FR,IN,BR,CA,AU,JP,NL,ES,IT,PL,SE,MX'.split(',');
const DEVICES = ['desktop', 'desktop', 'mobile', 'mobile', 'mobile', 'tablet', 'bot'];
const OSES = ['Windows', 'Mac OS', 'iOS', 'Android', 'Linux'];
const BROWSERS = ['Chrome', 'Mobile Safari', 'Safari', 'Firefox', 'Edge'];
/** Event types of the seeded events: mostly conversions, a few rare ones (a filter that matches little). */
const EVENT_TYPES = [
  ...Array(12).fill('conversion.created'),
  ...Array(5).fill('conversion.approved'),
  'conversion.rejected',
  'partner.applied',
  'fraud.high_risk',
] as string[];
const RARE_EVENT = 'partner.banned';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const pad = (n: number, width: number) => String(n).padStart(width, '0');
/** A deterministic pseudo-random pick (multiplicative hash), so both dialects hold the same data. */
const hash = (i: number, salt: number) => Math.imul(i + salt, 2654435761) >>> 8;
const pick = <T>(list: readonly T[], i: number, salt: number): T => list[hash(i, salt) % list.length] as T;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** An id made at `ms` (sorting by time, as `newId` does) whose random part is the row number. */
function idOf(prefix: Parameters<typeof idAt>[0], ms: number, n: number): string {
  let tail = '';
  let rest = n;
  for (let i = 0; i < 16; i++) {
    tail = ALPHABET[rest % 32] + tail;
    rest = Math.floor(rest / 32);
  }
  return idAt(prefix, ms) + tail;
}

interface Seed {
  brandId: string;
  startMs: number;
  offerIds: string[];
  partnerIds: string[];
  subscriptionIds: string[];
  postbackIds: string[];
}

interface TableLoad {
  table: string;
  columns: string[];
  count: number;
  row: (i: number) => unknown[];
}

const eventAt = (seed: Seed, e: number) => seed.startMs + Math.floor((e * SPAN_MS) / EVENTS);
const clickAt = (seed: Seed, c: number) => seed.startMs + Math.floor((c * SPAN_MS) / CLICKS);
const conversionAt = (seed: Seed, v: number) => seed.startMs + Math.floor((v * SPAN_MS) / CONVERSIONS);
const eventId = (seed: Seed, e: number) => idOf('evt', eventAt(seed, e), e);
const clickId = (seed: Seed, c: number) => idOf('clk', clickAt(seed, c), c);
const conversionId = (seed: Seed, v: number) => idOf('conv', conversionAt(seed, v), v);
/** Conversion v comes from click v × 10 (one click in ten converts). */
const clickOfConversion = (v: number) => v * (CLICKS / CONVERSIONS);
const eventType = (e: number) => (e % 10_000 === 5 ? RARE_EVENT : pick(EVENT_TYPES, e, 7));
const deliveryStatus = (d: number) => {
  const h = hash(d, 11) % 100;
  return h < 94 ? 'succeeded' : h < 97 ? 'failed' : h < 99 ? 'retry_scheduled' : 'attempting';
};
const conversionStatus = (v: number) => {
  const h = hash(v, 13) % 10;
  return h < 7 ? 'approved' : h < 9 ? 'pending' : 'rejected';
};
const highRisk = (c: number) => hash(c, 17) % 50 === 0;

function tables(seed: Seed): TableLoad[] {
  const offerOf = (i: number) => i % OFFERS;
  const partnerOf = (i: number) => APPLICANTS + (Math.floor(i / OFFERS) % (PARTNERS - APPLICANTS));
  return [
    {
      table: 'events',
      columns: ['id', 'brand_id', 'type', 'payload', 'created_at'],
      count: EVENTS,
      row: (e) => {
        const at = eventAt(seed, e);
        const type = eventType(e);
        // A conversion's events come with it: event e is about the conversion recorded just before.
        const v = Math.floor((e * CONVERSIONS) / EVENTS);
        const data = type.startsWith('conversion.')
          ? { conversionId: conversionId(seed, v), offerId: seed.offerIds[offerOf(v)], status: 'approved' }
          : { partnerId: seed.partnerIds[partnerOf(e)] };
        const envelope = {
          id: eventId(seed, e),
          event: type,
          createdAt: new Date(at).toISOString(),
          brandId: seed.brandId,
          data,
        };
        return [eventId(seed, e), seed.brandId, type, JSON.stringify(envelope), at];
      },
    },
    {
      // Delivery d belongs to event d div 2: a webhook to one of the subscriptions, and a
      // webhook (even events) or a partner postback (odd events) as the second.
      table: 'webhook_deliveries',
      columns: [
        'id',
        'brand_id',
        'kind',
        'subscription_id',
        'event_id',
        'event',
        'status',
        'attempt_count',
        'attempt_base',
        'next_attempt_at',
        'lease_until',
        'lease_owner',
        'target_url',
        'method',
        'created_at',
        'updated_at',
      ],
      count: DELIVERIES,
      row: (d) => {
        const e = Math.floor(d / 2);
        const at = eventAt(seed, e);
        const postback = d % 2 === 1 && e % 2 === 1;
        const status = deliveryStatus(d);
        const attempts = status === 'failed' ? 6 : status === 'retry_scheduled' ? 2 : status === 'attempting' ? 0 : 1;
        return [
          idOf('wh', at, d),
          seed.brandId,
          postback ? 'postback' : 'webhook',
          postback ? seed.postbackIds[e % POSTBACK_TEMPLATES] : seed.subscriptionIds[(e + (d % 2)) % SUBSCRIPTIONS],
          eventId(seed, e),
          eventType(e),
          status,
          attempts,
          0,
          status === 'retry_scheduled' || status === 'attempting' ? at + 300_000 : null,
          null,
          null,
          postback ? `https://partner${e % POSTBACK_TEMPLATES}.example/pb?cid=${e}` : null,
          postback ? 'GET' : null,
          at,
          at + 1000,
        ];
      },
    },
    {
      table: 'webhook_attempts',
      columns: ['delivery_id', 'number', 'attempted_at', 'status_code', 'latency_ms', 'response_body', 'error'],
      count: DELIVERIES,
      row: (d) => {
        const at = eventAt(seed, Math.floor(d / 2));
        const status = deliveryStatus(d);
        const attempts = status === 'failed' ? 6 : status === 'retry_scheduled' ? 2 : status === 'attempting' ? 0 : 1;
        if (attempts === 0) return [];
        const ok = status === 'succeeded';
        return [
          idOf('wh', at, d),
          attempts,
          at + 1000,
          ok ? 200 : 503,
          20 + (hash(d, 19) % 400),
          ok ? '{"ok":true}' : '{"error":"upstream unavailable"}',
          null,
        ];
      },
    },
    {
      table: 'clicks',
      columns: [
        'id',
        'brand_id',
        'offer_id',
        'partner_id',
        'ip',
        'user_agent',
        'referer',
        'sub1',
        'sub2',
        'sub3',
        'sub4',
        'sub5',
        'fraud_score',
        'fraud_signals',
        'high_risk',
        'country',
        'device_type',
        'os',
        'browser',
        'referrer_host',
        'created_at',
      ],
      count: CLICKS,
      row: (c) => {
        const risky = highRisk(c);
        const referrer = c % 3 === 0 ? null : `news${hash(c, 23) % 20}.example`;
        return [
          clickId(seed, c),
          seed.brandId,
          seed.offerIds[offerOf(c)],
          seed.partnerIds[partnerOf(c)],
          `203.0.${hash(c, 29) % 256}.${hash(c, 31) % 256}`,
          'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148',
          referrer ? `https://${referrer}/story/${c % 1000}` : null,
          `campaign-${hash(c, 37) % 20}`,
          null,
          null,
          null,
          null,
          risky ? 90 : hash(c, 41) % 30,
          risky ? '["datacenter_ip","bot_user_agent"]' : '[]',
          risky ? 1 : 0,
          pick(COUNTRIES, c, 1),
          pick(DEVICES, c, 2),
          pick(OSES, c, 3),
          pick(BROWSERS, c, 4),
          referrer,
          clickAt(seed, c),
        ];
      },
    },
    {
      table: 'conversions',
      columns: [
        'id',
        'brand_id',
        'offer_id',
        'partner_id',
        'click_id',
        'status',
        'revenue_cents',
        'payout_cents',
        'currency',
        'sub1',
        'external_txn_id',
        'cap_exceeded',
        'hold_until',
        'approved_at',
        'approved_by',
        'rejected_at',
        'rejection_reason',
        'local_day',
        'local_hour',
        'country',
        'device_type',
        'os',
        'browser',
        'referrer_host',
        'created_at',
      ],
      count: CONVERSIONS,
      row: (v) => {
        const c = clickOfConversion(v);
        const at = conversionAt(seed, v);
        const status = conversionStatus(v);
        return [
          conversionId(seed, v),
          seed.brandId,
          seed.offerIds[offerOf(c)],
          seed.partnerIds[partnerOf(c)],
          clickId(seed, c),
          status,
          4000 + 100 * offerOf(c),
          1200 + 50 * offerOf(c),
          'USD',
          `campaign-${hash(c, 37) % 20}`,
          `order-${pad(v, 7)}`,
          0,
          null,
          status === 'approved' ? at : null,
          status === 'approved' ? 'manual' : null,
          status === 'rejected' ? at : null,
          status === 'rejected' ? 'duplicate order' : null,
          dayOf(at),
          pad(new Date(at).getUTCHours(), 2),
          pick(COUNTRIES, c, 1),
          pick(DEVICES, c, 2),
          pick(OSES, c, 3),
          pick(BROWSERS, c, 4),
          c % 3 === 0 ? null : `news${hash(c, 23) % 20}.example`,
          at,
        ];
      },
    },
    {
      // What the tracking link and ingest append for reports: one fact per click, one per conversion.
      table: 'analytics_facts',
      columns: [
        'brand_id',
        'day',
        'hour',
        'offer_id',
        'partner_id',
        'currency',
        'country',
        'device_type',
        'os',
        'browser',
        'referrer_host',
        'sub1',
        'clicks',
        'pending',
        'approved',
        'rejected',
        'revenue_cents',
        'payout_cents',
      ],
      count: CLICKS + CONVERSIONS,
      row: (i) => {
        const conversion = i >= CLICKS;
        const v = i - CLICKS;
        const c = conversion ? clickOfConversion(v) : i;
        const at = conversion ? conversionAt(seed, v) : clickAt(seed, c);
        const status = conversion ? conversionStatus(v) : null;
        const counted = status === 'approved' || status === 'pending';
        return [
          seed.brandId,
          dayOf(at),
          pad(new Date(at).getUTCHours(), 2),
          seed.offerIds[offerOf(c)],
          seed.partnerIds[partnerOf(c)],
          'USD',
          pick(COUNTRIES, c, 1),
          pick(DEVICES, c, 2),
          pick(OSES, c, 3),
          pick(BROWSERS, c, 4),
          c % 3 === 0 ? null : `news${hash(c, 23) % 20}.example`,
          `campaign-${hash(c, 37) % 20}`,
          conversion ? 0 : 1,
          status === 'pending' ? 1 : 0,
          status === 'approved' ? 1 : 0,
          status === 'rejected' ? 1 : 0,
          counted ? 4000 + 100 * offerOf(c) : 0,
          counted ? 1200 + 50 * offerOf(c) : 0,
        ];
      },
    },
  ];
}

/** The seed's ids, all made from its start (so a kept database can be measured again). */
function seedOf(brandId: string, startMs: number): Seed {
  return {
    brandId,
    startMs,
    offerIds: Array.from({ length: OFFERS }, (_, o) => idOf('off', startMs - DAY_MS, o)),
    partnerIds: Array.from({ length: PARTNERS }, (_, p) => idOf('prt', startMs - DAY_MS, p)),
    subscriptionIds: Array.from({ length: SUBSCRIPTIONS }, (_, s) => idOf('sub', startMs - DAY_MS, s)),
    postbackIds: Array.from({ length: POSTBACK_TEMPLATES }, (_, t) => idOf('pbk', startMs - DAY_MS, t)),
  };
}

/** Brand (zone UTC), offers, partners, subscriptions and postback templates. */
async function createBrand(db: Database, startMs: number): Promise<Seed> {
  await migrateToLatest(db);
  const now = systemClock.now();
  const seed = await db.transact(async (trx) => {
    const { brand } = await createBrandWithFirstKey(trx, systemClock, { name: 'Bench Dashboard' }, {});
    const { offerIds, partnerIds, subscriptionIds, postbackIds } = seedOf(brand.id, startMs);
    await trx
      .insertInto('offers')
      .values(
        offerIds.map((id, o) => ({
          id,
          brand_id: brand.id,
          name: `Offer ${o}`,
          destination_url: 'https://shop.example/?c={click_id}',
          status: 'active' as const,
          currency: 'USD',
          revenue_cents: 4000 + 100 * o,
          payout_cents: 1200 + 50 * o,
          conversion_status: 'pending' as const,
          hold_seconds: null,
          cap_daily: null,
          cap_weekly: null,
          cap_monthly: null,
          cap_global: null,
          fallback_url: null,
          postback_token: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    await trx
      .insertInto('partners')
      .values(
        partnerIds.map((id, p) => ({
          id,
          brand_id: brand.id,
          name: `Partner ${p}`,
          email: `partner${p}@example.com`,
          website: null,
          status: p < APPLICANTS ? ('applicant' as const) : ('active' as const),
          ban_reason: null,
          created_at: now,
          approved_at: p < APPLICANTS ? null : now,
          banned_at: null,
          updated_at: now,
        })),
      )
      .execute();
    await trx
      .insertInto('webhook_subscriptions')
      .values(
        subscriptionIds.map((id, s) => ({
          id,
          brand_id: brand.id,
          url: `https://hooks${s}.example/affitrack`,
          events: JSON.stringify(['conversion.created', 'conversion.approved', 'partner.applied']),
          secret: null,
          status: 'active' as const,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    await trx
      .insertInto('partner_postbacks')
      .values(
        postbackIds.map((id, t) => ({
          id,
          brand_id: brand.id,
          partner_id: partnerIds[APPLICANTS + t] ?? '',
          offer_id: null,
          url: `https://partner${t}.example/pb?cid={click_id}`,
          events: JSON.stringify(['conversion.created']),
          created_at: now,
        })),
      )
      .execute();
    return { brandId: brand.id, startMs, offerIds, partnerIds, subscriptionIds, postbackIds };
  });
  return seed;
}

function loadSqlite(file: string, loads: TableLoad[]): void {
  const raw = new SQLite(file);
  try {
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = OFF');
    for (const load of loads) {
      const insert = raw.prepare(
        `insert into ${load.table} (${load.columns.join(', ')}) values (${load.columns.map(() => '?').join(', ')})`,
      );
      raw.transaction(() => {
        for (let i = 0; i < load.count; i++) {
          const row = load.row(i);
          if (row.length > 0) insert.run(row);
        }
      })();
    }
  } finally {
    raw.close();
  }
}

async function loadPostgres(db: Database, loads: TableLoad[]): Promise<void> {
  for (const load of loads) {
    const columns = sql.join(load.columns.map((c) => sql.ref(c)));
    for (let first = 0; first < load.count; first += PG_ROWS_PER_INSERT * 50) {
      await db.admin.transaction().execute(async (trx) => {
        const end = Math.min(load.count, first + PG_ROWS_PER_INSERT * 50);
        for (let start = first; start < end; start += PG_ROWS_PER_INSERT) {
          const rows: unknown[][] = [];
          for (let i = start; i < Math.min(end, start + PG_ROWS_PER_INSERT); i++) {
            const row = load.row(i);
            if (row.length > 0) rows.push(row);
          }
          if (rows.length === 0) continue;
          const values = sql.join(rows.map((row) => sql`(${sql.join(row)})`));
          await sql`insert into ${sql.table(load.table)} (${columns}) values ${values}`.execute(trx);
        }
      });
    }
  }
}

/** The pages measured: every main page and the filters a marketer uses most. */
function pages(seed: Seed, ids: { delivery: string; event: string; conversion: string; click: string; txn: string }) {
  const today = dayOf(seed.startMs + SPAN_MS - 1);
  const weekAgo = dayOf(seed.startMs + SPAN_MS - 7 * DAY_MS);
  const midFrom = dayOf(seed.startMs + 10 * DAY_MS);
  const midTo = dayOf(seed.startMs + 12 * DAY_MS);
  const offer = seed.offerIds[3];
  const partner = seed.partnerIds[APPLICANTS + 7];
  return [
    ['overview', '/dashboard'],
    ['offers', '/dashboard/offers'],
    ['offer', `/dashboard/offers/${offer}`],
    ['partners', '/dashboard/partners'],
    ['partners: applicants', '/dashboard/partners?status=applicant'],
    ['partner', `/dashboard/partners/${partner}`],
    ['conversions', '/dashboard/conversions'],
    ['conversions: pending', '/dashboard/conversions?status=pending'],
    ['conversions: rejected', '/dashboard/conversions?status=rejected'],
    ['conversions: offer', `/dashboard/conversions?offerId=${offer}`],
    ['conversions: partner', `/dashboard/conversions?partnerId=${partner}`],
    ['conversions: 3 days', `/dashboard/conversions?from=${midFrom}&to=${midTo}`],
    [
      'conversions: pending, offer, 7 days',
      `/dashboard/conversions?status=pending&offerId=${offer}&from=${weekAgo}&to=${today}`,
    ],
    ['conversions: txn id', `/dashboard/conversions?txn=${ids.txn}`],
    ['conversion', `/dashboard/conversions/${ids.conversion}`],
    ['clicks', '/dashboard/clicks'],
    ['clicks: high risk', '/dashboard/clicks?risk=high'],
    ['clicks: offer', `/dashboard/clicks?offerId=${offer}`],
    ['clicks: partner', `/dashboard/clicks?partnerId=${partner}`],
    ['clicks: partner, high risk', `/dashboard/clicks?partnerId=${partner}&risk=high`],
    ['click', `/dashboard/clicks/${ids.click}`],
    ['reports', '/dashboard/reports'],
    ['reports: day, offer', `/dashboard/reports?time=day&by=offer`],
    ['analytics', '/dashboard/analytics'],
    ['analytics: country, device', `/dashboard/analytics?d1=country&d2=deviceType`],
    ['webhooks', '/dashboard/webhooks'],
    ['webhook', `/dashboard/webhooks/${seed.subscriptionIds[1]}`],
    ['deliveries', '/dashboard/deliveries'],
    ['deliveries: failed', '/dashboard/deliveries?status=failed'],
    ['deliveries: retrying', '/dashboard/deliveries?status=retry_scheduled'],
    ['deliveries: postbacks', '/dashboard/deliveries?kind=postback'],
    ['deliveries: event type', '/dashboard/deliveries?event=conversion.approved'],
    ['deliveries: rare event type', `/dashboard/deliveries?event=${RARE_EVENT}`],
    ['deliveries: subscription', `/dashboard/deliveries?subscription=${seed.subscriptionIds[2]}`],
    ['deliveries: partner', `/dashboard/deliveries?partnerId=${seed.partnerIds[APPLICANTS + 3]}`],
    ['deliveries: 3 days', `/dashboard/deliveries?from=${midFrom}&to=${midTo}`],
    [
      'deliveries: failed, event, 3 days',
      `/dashboard/deliveries?status=failed&event=conversion.created&from=${midFrom}&to=${midTo}`,
    ],
    ['deliveries: search wh_', `/dashboard/deliveries?q=${ids.delivery}`],
    ['deliveries: search evt_', `/dashboard/deliveries?q=${ids.event}`],
    ['deliveries: search conv_', `/dashboard/deliveries?q=${ids.conversion}`],
    ['delivery', `/dashboard/deliveries/${ids.delivery}`],
    ['payouts', '/dashboard/payouts'],
    ['settings', '/dashboard/settings'],
    ['api keys', '/dashboard/settings/api-keys'],
    ['blocklist', '/dashboard/settings/blocklist'],
  ] as Array<[string, string]>;
}

/** Cookies of one signed-in browser, kept by hand (fetch has no cookie jar). */
class Session {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly base: string) {}

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(this.base + url, { ...init, headers, redirect: 'manual' });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return res;
  }

  async signIn(): Promise<void> {
    const form = await (await this.fetch('/dashboard/login')).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form)?.[1] ?? '';
    const res = await this.fetch('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, email: EMAIL, password: PASSWORD }).toString(),
    });
    await res.text();
    if (res.status !== 303) throw new Error(`dashboard sign-in: ${res.status}`);
  }
}

async function measure(dialect: Dialect, db: Database, seed: Seed, dataDir: string): Promise<void> {
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' });
  const ctx = createContext(config, {
    db,
    logger: createLogger(config, pino.destination({ dest: '/dev/null', sync: false })),
  });
  const user = await db.read.selectFrom('dashboard_users').select('id').where('email', '=', EMAIL).executeTakeFirst();
  if (!user) await createUser(ctx, { brandId: seed.brandId, email: EMAIL, password: PASSWORD });
  const app = await buildApp(ctx);
  await app.listen({ port, host: '127.0.0.1' });
  try {
    const session = new Session(`http://127.0.0.1:${port}`);
    await session.signIn();
    const e = Math.floor(EVENTS * 0.6) + 1;
    const v = Math.floor(CONVERSIONS * 0.6);
    const ids = {
      delivery: idOf('wh', eventAt(seed, e), 2 * e),
      event: eventId(seed, e),
      conversion: conversionId(seed, v),
      click: clickId(seed, clickOfConversion(v)),
      txn: `order-${pad(v, 7)}`,
    };
    const misses: string[] = [];
    for (const [name, url] of pages(seed, ids)) {
      const once = async () => {
        const res = await session.fetch(url, { headers: { 'accept-encoding': 'br, gzip' } });
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body.slice(0, 300)}`);
      };
      const first = performance.now();
      try {
        await once();
      } catch (error) {
        // A page slower than REQUEST_TIMEOUT (30 s) is cut off by the server: a miss, not the end of the run.
        console.log(`  ${dialect}: ${name} failed after ${(performance.now() - first).toFixed(0)} ms: ${error}`);
        misses.push(name);
        continue;
      }
      // A page far over the target is timed a few times only: its p95 is the slowest of those.
      const slow = performance.now() - first > 10 * TARGET_P95_MS;
      if (!slow) for (let i = 1; i < WARMUP; i++) await once();
      const runs = slow ? SLOW_RUNS : RUNS;
      const times: number[] = [];
      // CPU of this process (the app and the client) per request: unlike latency it barely
      // moves when other work shares the machine.
      const cpuBefore = process.cpuUsage();
      for (let i = 0; i < runs; i++) {
        const started = performance.now();
        await once();
        times.push(performance.now() - started);
      }
      const cpu = process.cpuUsage(cpuBefore);
      const cpuPerRequest = (cpu.user + cpu.system) / 1000 / runs;
      times.sort((a, b) => a - b);
      const p95 = percentile(times, 95);
      if (p95 > TARGET_P95_MS) misses.push(name);
      record({
        benchmark: 'dashboard',
        metric: `${name}: p50 ${percentile(times, 50).toFixed(1)} ms, CPU ${cpuPerRequest.toFixed(1)} ms/request, p95 of ${runs}`,
        value: p95,
        unit: 'ms',
        target: `p95 <= ${TARGET_P95_MS} ms`,
        pass: p95 <= TARGET_P95_MS,
        dialect,
      });
    }
    console.log(
      `  ${dialect}: ${misses.length === 0 ? 'every page within target' : `over target: ${misses.join(', ')}`}`,
    );
  } finally {
    await app.close();
    await closeContext(ctx);
  }
}

/** The brand and start of a database seeded by an earlier run (BENCH_DASHBOARD_DATA_DIR). */
async function keptSeed(db: Database): Promise<Seed | null> {
  const brand = await db.read
    .selectFrom('brands')
    .select('id')
    .where('name', '=', 'Bench Dashboard')
    .executeTakeFirst();
  if (!brand) return null;
  const first = await db.read
    .selectFrom('clicks')
    .select((eb) => eb.fn.min('created_at').as('start'))
    .where('brand_id', '=', brand.id)
    .executeTakeFirstOrThrow();
  return seedOf(brand.id, Number(first.start));
}

async function seedDatabase(db: Database, dataDir: string, startMs: number): Promise<Seed> {
  const seed = await createBrand(db, startMs);
  const started = performance.now();
  const loads = tables(seed);
  if (db.dialect === 'sqlite') loadSqlite(path.join(dataDir, 'affitrack.db'), loads);
  else await loadPostgres(db, loads);
  // The fold of a bulk load rewrites every fact once: no need to wait for the disk meanwhile.
  if (db.dialect === 'sqlite') await sql`pragma synchronous = OFF`.execute(db.admin);
  await db.admin.transaction().execute(async (trx) => {
    if (db.dialect === 'postgres') await sql`set local work_mem = '256MB'`.execute(trx);
    await rollUpLoadedFacts(trx, seed.brandId);
  });
  // Settle the load as a server would be some time after it (see bench/reports.ts).
  if (db.dialect === 'sqlite') {
    await sql`pragma synchronous = FULL`.execute(db.admin);
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
  } else {
    await sql`vacuum analyze`.execute(db.admin);
    await sql`checkpoint`.execute(db.admin).catch(() => console.log('  postgres: checkpoint not permitted'));
  }
  console.log(
    `  ${db.dialect}: ${DELIVERIES} deliveries, ${CLICKS} clicks, ${CONVERSIONS} conversions seeded in ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return seed;
}

/**
 * Seeds a database and measures the pages. With BENCH_DASHBOARD_DATA_DIR (SQLite) or
 * BENCH_DASHBOARD_SCHEMA (PostgreSQL) the seeded database is kept in that folder or schema,
 * and a later run measures it again without seeding (after migrating it: a change's new
 * indexes are built on the million rows).
 */
async function benchDialect(dialect: Dialect, databaseUrl: string | null, startMs: number): Promise<void> {
  const keptDir = dialect === 'sqlite' ? process.env.BENCH_DASHBOARD_DATA_DIR : undefined;
  if (keptDir) mkdirSync(keptDir, { recursive: true });
  const dataDir = keptDir ?? mkdtempSync(path.join(tmpdir(), 'affitrack-bench-dashboard-'));
  const keptSchema = dialect === 'postgres' ? process.env.BENCH_DASHBOARD_SCHEMA : undefined;
  if (keptSchema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(keptSchema))
    throw new Error('BENCH_DASHBOARD_SCHEMA: a plain name');
  const schema = databaseUrl ? (keptSchema ?? `bench_${randomBytes(6).toString('hex')}`) : undefined;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl ?? undefined });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  if (schema) await admin(`create schema if not exists ${schema}`);
  let db: Database | null = new Database({ databaseUrl, dataDir, schema });
  try {
    await migrateToLatest(db);
    const kept = keptDir || keptSchema ? await keptSeed(db) : null;
    if (kept) console.log(`  ${dialect}: measuring the database kept in ${keptDir ?? keptSchema}`);
    const seed = kept ?? (await seedDatabase(db, dataDir, startMs));
    const owned = db;
    db = null; // closed by measure()
    await measure(dialect, owned, seed, dataDir);
  } finally {
    await db?.close();
    if (schema && !keptSchema) await admin(`drop schema if exists ${schema} cascade`);
    if (!keptDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchDashboard(): Promise<void> {
  console.log('\n# Dashboard: 1,000,000 deliveries, 1,000,000 clicks, 100,000 conversions; p95 of every page');
  const pgUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
  // The data ends now, so "today" and "the last 30 days" on the pages have data.
  const startMs = Date.now() - SPAN_MS;
  const only = process.env.BENCH_DIALECT;
  if (only !== 'postgres') await benchDialect('sqlite', null, startMs);
  if (only === 'sqlite') return;
  if (!pgUrl) {
    console.log('  postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  await benchDialect('postgres', pgUrl, startMs);
}
