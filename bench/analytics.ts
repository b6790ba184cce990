/**
 * Issue #15 benchmark: click analytics at scale. 1,000,000 clicks and 200,000 conversions
 * over 30 days (20 offers in USD and EUR, 100 partners, ~50 countries, 5 device types, 10 OS,
 * 15 browsers, 200 referrer hosts, sub1 from 1,000 values, sparse sub2–sub5) as analytics
 * facts, folded into the rollups; then one-, two- and three-dimension 30-day reports through
 * the real app served on a port (fetched, body read as text), p95 over sequential requests
 * with the CPU per request, beside a same-run baseline: the same GROUP BY on the raw facts
 * (one row per click or conversion). Then the fold job's cost per 1,000 facts of live
 * traffic. SQLite always; PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL is set (in
 * a fresh schema, dropped afterwards). Target: p95 <= 50 ms for every report of one or two
 * dimensions. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { rollUpLoadedFacts } from '../src/modules/analytics/bulkFold.js';
import { ATTRIBUTE_COLUMN, type Attribute, isAttribute } from '../src/modules/analytics/dimensions.js';
import type { FactRow } from '../src/modules/analytics/facts.js';
import { FOLD_BATCH, foldFacts } from '../src/modules/analytics/fold.js';
import { insertApiKey } from '../src/modules/apiKeys/service.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';
import { freePort, percentile, record } from './lib.js';

const CLICKS = 1_000_000;
const CONVERSIONS = 200_000;
const DAYS = 30;
const OFFERS = 20;
const PARTNERS = 100;
const SEQUENTIAL = 40;
const WARMUP = 5;
const BASELINE_RUNS = 3;
const TARGET_P95_MS = 50;
const ROWS_PER_INSERT = 1000;
const DAY_MS = 86_400_000;
/** Facts of the fold measurement: one hour of live traffic on the last day, folded as the worker does. */
const FOLD_FACTS = 50_000;

/** ~50 countries, the large markets repeated so they carry more traffic, as in real data. */
const COUNTRIES = [
  ...'US,US,US,US,US,DE,DE,DE,GB,GB,GB,FR,FR,IN,IN,BR,BR,CA,AU,JP,NL,ES,IT,PL,SE,MX,TR,KR,ZA,AR'.split(','),
  ...'BE,CH,AT,IE,PT,DK,NO,FI,CZ,RO,HU,GR,IL,AE,SA,EG,NG,KE,ID,TH,VN,PH,MY,SG,NZ,CL,CO,PE,UA'.split(','),
];
const DEVICES = ['desktop', 'desktop', 'mobile', 'mobile', 'mobile', 'tablet', 'bot', 'other'];
const OSES = ['Windows', 'Mac OS', 'iOS', 'Android', 'Linux', 'Chrome OS', 'Ubuntu', 'HarmonyOS', 'Fedora', 'Tizen'];
const BROWSERS = [
  ...['Chrome', 'Mobile Safari', 'Safari', 'Firefox', 'Edge', 'Samsung Browser', 'Opera', 'Chrome WebView'],
  ...['Chrome Mobile', 'Firefox Mobile', 'Yandex', 'UCBrowser', 'Brave', 'Vivaldi', 'Silk'],
];
const REFERRER_HOSTS = 200;
const SUB1_VALUES = 1000;

/**
 * The reports measured, every one over the whole 30 days: one and two dimensions (a time
 * unit, offer and partner count as dimensions, as do filters), then three.
 */
const REPORTS = [
  'groupBy=country',
  'groupBy=deviceType',
  'groupBy=sub1',
  'groupBy=hour',
  'groupBy=referrerHost',
  'groupBy=day',
  'groupBy=offer',
  'groupBy=partner',
  'groupBy=day,country',
  'groupBy=week,deviceType',
  'groupBy=month,os',
  'groupBy=offer,browser',
  'groupBy=partner,deviceType',
  'groupBy=partner,country',
  'groupBy=offer&country=DE',
  'groupBy=country&offerId=off_bench_03',
  'groupBy=sub1&partnerId=prt_bench_007',
  'groupBy=country,deviceType',
  'groupBy=os,browser',
  'groupBy=country,hour',
  'groupBy=deviceType,sub1',
  'groupBy=country,referrerHost',
  'groupBy=country,sub1',
  'groupBy=referrerHost,sub1',
  'groupBy=deviceType&country=DE',
  'groupBy=country&deviceType=mobile',
  'groupBy=browser&os=Android',
  'groupBy=sub1&deviceType=mobile',
  'groupBy=country&sub1=campaign-0042',
  'groupBy=referrerHost&country=DE',
  'groupBy=day&country=DE&deviceType=mobile',
  'groupBy=day,country,deviceType',
  'groupBy=offer,country,deviceType',
];

/** A deterministic pseudo-random pick (multiplicative hash), so both dialects hold the same data. */
const pick = <T>(list: readonly T[], i: number, salt: number): T =>
  list[(Math.imul(i ^ Math.imul(salt, 0x9e3779b1), 2654435761) >>> 8) % list.length] as T;
const hashOf = (i: number, salt: number) => Math.imul(i ^ Math.imul(salt, 0x9e3779b1), 2246822519) >>> 8;
const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** sub2–sub5 are sparse: most links set none of them. */
function sparseSub(i: number, salt: number, share: number, values: number): string | null {
  return hashOf(i, salt) % 1000 < share * 1000 ? `s${salt}-${hashOf(i, salt + 1) % values}` : null;
}

function fact(i: number, startMs: number, spanMs: number, count: number, conversion: boolean): FactRow {
  const at = startMs + Math.floor((i * spanMs) / count);
  const offer = i % OFFERS;
  const status = conversion ? (Math.imul(i, 40503) >>> 4) % 10 : -1;
  const counted = status >= 0 && status < 9;
  return {
    brand_id: '',
    day: new Date(at).toISOString().slice(0, 10),
    hour: pad(new Date(at).getUTCHours(), 2),
    offer_id: `off_bench_${pad(offer, 2)}`,
    partner_id: `prt_bench_${pad(Math.floor(i / OFFERS) % PARTNERS, 3)}`,
    currency: offer < 16 ? 'USD' : 'EUR',
    country: pick(COUNTRIES, i, 1),
    device_type: pick(DEVICES, i, 2),
    os: pick(OSES, i, 3),
    browser: pick(BROWSERS, i, 4),
    referrer_host: i % 3 === 0 ? null : `site${hashOf(i, 5) % REFERRER_HOSTS}.example`,
    sub1: `campaign-${pad(hashOf(i, 6) % SUB1_VALUES, 4)}`,
    sub2: sparseSub(i, 7, 0.1, 50),
    sub3: sparseSub(i, 9, 0.03, 20),
    sub4: sparseSub(i, 11, 0.01, 10),
    sub5: sparseSub(i, 13, 0.005, 5),
    clicks: conversion ? 0 : 1,
    pending: status >= 7 && status < 9 ? 1 : 0,
    approved: status >= 0 && status < 7 ? 1 : 0,
    rejected: status === 9 ? 1 : 0,
    revenue_cents: counted ? 1000 + 50 * offer : 0,
    payout_cents: counted ? 400 + 20 * offer : 0,
  };
}

async function insertFacts(db: Database, total: number, make: (i: number) => FactRow): Promise<void> {
  for (let first = 0; first < total; first += 100 * ROWS_PER_INSERT) {
    await db.admin.transaction().execute(async (trx) => {
      for (let start = first; start < Math.min(total, first + 100 * ROWS_PER_INSERT); start += ROWS_PER_INSERT) {
        const rows = [];
        for (let i = start; i < Math.min(total, start + ROWS_PER_INSERT); i++) rows.push(make(i));
        await trx.insertInto('analytics_facts').values(rows).execute();
      }
    });
  }
}

async function load(db: Database, brandId: string, startMs: number): Promise<void> {
  const span = DAYS * DAY_MS;
  await insertFacts(db, CLICKS + CONVERSIONS, (i) => {
    const row = i < CLICKS ? fact(i, startMs, span, CLICKS, false) : fact(i - CLICKS, startMs, span, CONVERSIONS, true);
    row.brand_id = brandId;
    return row;
  });
  await db.admin.transaction().execute(async (trx) => {
    if (db.dialect === 'postgres') await sql`set local work_mem = '256MB'`.execute(trx);
    await rollUpLoadedFacts(trx, brandId);
  });
  if (db.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
  else await sql`vacuum analyze analytics_facts, analytics_rollups`.execute(db.admin);
}

/**
 * What the fold job costs: an hour of live traffic (clicks with a conversion every fifth) of
 * another brand, appended as facts and folded by the worker's own `foldFacts`, beside the
 * million loaded ones. Wall time and this process's CPU time (the fold runs in the server
 * process, where it competes with the tracking link) per 1,000 facts.
 */
async function measureFold(ctx: AppContext, brandId: string, startMs: number): Promise<void> {
  const hourStart = startMs + (DAYS - 1) * DAY_MS + 10 * 3_600_000;
  await insertFacts(ctx.db, FOLD_FACTS, (i) => {
    const row = fact(i, hourStart, 3_600_000, FOLD_FACTS, i % 5 === 4);
    row.brand_id = brandId;
    return row;
  });
  const cpu = process.cpuUsage();
  const started = performance.now();
  const folded = await foldFacts(ctx);
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (folded !== FOLD_FACTS) throw new Error(`analytics: folded ${folded} facts, appended ${FOLD_FACTS}`);
  const perThousand = (ms: number) => (ms * 1000) / FOLD_FACTS;
  record({
    benchmark: 'analytics',
    metric: `fold: wall time per 1,000 facts (${FOLD_FACTS} live facts, batches of ${FOLD_BATCH})`,
    value: perThousand(wall),
    unit: 'ms',
    dialect: ctx.db.dialect,
  });
  record({
    benchmark: 'analytics',
    metric: 'fold: CPU time of the server process per 1,000 facts',
    value: perThousand((used.user + used.system) / 1000),
    unit: 'ms',
    dialect: ctx.db.dialect,
  });
}

/** Dimensions a report involves: its groupings and its filters (offer and partner included). */
function dimensionsOf(query: string): number {
  const params = new URLSearchParams(query);
  const keys = new Set((params.get('groupBy') ?? '').split(',').filter(Boolean));
  for (const name of params.keys()) if (name !== 'groupBy') keys.add(name.replace(/Id$/, ''));
  return keys.size;
}

/** The same grouping, straight from the raw facts: what a report without rollups would run. */
async function rawReport(db: Database, brandId: string, query: string, from: string, to: string): Promise<number> {
  const params = new URLSearchParams(query);
  const keys = (params.get('groupBy') ?? '').split(',').filter(Boolean);
  const columns = keys
    .map((k) =>
      isAttribute(k) ? ATTRIBUTE_COLUMN[k as Attribute] : k === 'offer' || k === 'partner' ? `${k}_id` : 'day',
    )
    .map((c) => sql.ref(c));
  const filters = [sql`brand_id = ${brandId}`, sql`day >= ${from}`, sql`day <= ${to}`];
  for (const [name, value] of params) {
    if (isAttribute(name)) filters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[name])} = ${value}`);
    if (name === 'offerId' || name === 'partnerId')
      filters.push(sql`${sql.ref(name === 'offerId' ? 'offer_id' : 'partner_id')} = ${value}`);
  }
  const started = performance.now();
  await sql`
    select ${sql.join([...columns, sql`currency`, sql`sum(clicks)`, sql`sum(pending)`, sql`sum(approved)`, sql`sum(revenue_cents)`])}
    from analytics_facts where ${sql.join(filters, sql` and `)}
    group by ${sql.join([...columns, sql.ref('currency')])}`.execute(db.read);
  return performance.now() - started;
}

/** The brand and first day of a database loaded by an earlier run (BENCH_ANALYTICS_DATA_DIR / _SCHEMA). */
async function keptLoad(db: Database): Promise<{ brandId: string; startMs: number; secret: string } | null> {
  const brand = await db.read
    .selectFrom('brands')
    .select('id')
    .where('name', '=', 'Bench Analytics')
    .executeTakeFirst();
  if (!brand) return null;
  const first = await db.read
    .selectFrom('analytics_facts')
    .select((eb) => eb.fn.min('day').as('day'))
    .where('brand_id', '=', brand.id)
    .executeTakeFirstOrThrow();
  // A new key each run: the secret of the first one is not kept.
  const { secret } = await db.transact((trx) =>
    insertApiKey(trx, systemClock, { brandId: brand.id, name: 'bench', rateLimitPerMinute: 100_000_000 }),
  );
  return { brandId: brand.id, startMs: Date.parse(`${first.day}T00:00:00Z`), secret };
}

/**
 * Loads the facts and measures the reports. BENCH_ANALYTICS_DATA_DIR (SQLite) or
 * BENCH_ANALYTICS_SCHEMA (PostgreSQL) keeps the loaded database there, and a later run
 * measures it again without loading (after migrating it: a change's new tables and indexes
 * are built on the million facts).
 */
async function benchDialect(dialect: Dialect, databaseUrl: string | null): Promise<void> {
  const keptDir = dialect === 'sqlite' ? process.env.BENCH_ANALYTICS_DATA_DIR : undefined;
  const keptSchema = dialect === 'postgres' ? process.env.BENCH_ANALYTICS_SCHEMA : undefined;
  if (keptDir) mkdirSync(keptDir, { recursive: true });
  const dataDir = keptDir ?? mkdtempSync(path.join(tmpdir(), 'affitrack-bench-analytics-'));
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
  const db = new Database({ databaseUrl, dataDir, schema });
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' });
  const ctx = createContext(config, {
    db,
    logger: createLogger(config, pino.destination({ dest: '/dev/null', sync: false })),
  });
  try {
    const migrating = performance.now();
    await migrateToLatest(db);
    const kept = keptDir || keptSchema ? await keptLoad(db) : null;
    if (kept) {
      console.log(
        `  ${dialect}: measuring the database kept in ${keptDir ?? keptSchema} (migrated in ${((performance.now() - migrating) / 1000).toFixed(1)} s)`,
      );
    }
    const now = new Date();
    const startMs =
      kept?.startMs ?? Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (DAYS - 1) * DAY_MS;
    const from = new Date(startMs).toISOString().slice(0, 10);
    const to = new Date(startMs + (DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
    let brandId: string;
    let secret: string;
    if (kept) ({ brandId, secret } = kept);
    else {
      const created = await db.transact((trx) =>
        createBrandWithFirstKey(trx, systemClock, { name: 'Bench Analytics' }, { rateLimitPerMinute: 100_000_000 }),
      );
      brandId = created.brand.id;
      secret = created.secret;
      const started = performance.now();
      await load(db, brandId, startMs);
      console.log(
        `  ${dialect}: ${CLICKS} clicks and ${CONVERSIONS} conversions loaded and rolled up in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    }
    // Served on a port and fetched, as bench/reports.ts does: the body read as text, not
    // parsed (a client's JSON parser is not the report's time), and no test transport
    // copying it in between (inject's copies of a 650 KB body cost ~10 ms).
    const app = await buildApp(ctx);
    await app.listen({ port, host: '127.0.0.1' });
    try {
      for (const query of REPORTS) {
        const url = `http://127.0.0.1:${port}/api/v1/reports?from=${from}&to=${to}&${query}`;
        const once = async () => {
          const res = await fetch(url, { headers: { authorization: `Bearer ${secret}` } });
          const text = await res.text();
          if (res.status !== 200) throw new Error(`analytics report ${query}: ${res.status} ${text}`);
          return text;
        };
        const first = performance.now();
        const body = JSON.parse(await once());
        // A report far over the target says all it has to say in a few runs.
        const runs = performance.now() - first > 10 * TARGET_P95_MS ? WARMUP : SEQUENTIAL;
        const filtered = [...new URLSearchParams(query).keys()].some((k) => k !== 'groupBy');
        if (!filtered && body.totals.clicks !== CLICKS) {
          throw new Error(`analytics: report counts ${body.totals.clicks} clicks, loaded ${CLICKS}`);
        }
        for (let i = 0; i < WARMUP; i++) await once();
        const times: number[] = [];
        const cpuBefore = process.cpuUsage();
        for (let i = 0; i < runs; i++) {
          const t = performance.now();
          await once();
          times.push(performance.now() - t);
        }
        // CPU of this process per request (app and client; on PostgreSQL the server's is not
        // in it): unlike latency, it barely moves when other work shares the machine.
        const cpu = process.cpuUsage(cpuBefore);
        const cpuPerRequest = (cpu.user + cpu.system) / 1000 / runs;
        const raw: number[] = [];
        for (let i = 0; i < BASELINE_RUNS; i++) raw.push(await rawReport(db, brandId, query, from, to));
        times.sort((a, b) => a - b);
        raw.sort((a, b) => a - b);
        const p95 = percentile(times, 95);
        const baseline = percentile(raw, 50);
        const targeted = dimensionsOf(query) <= 2;
        record({
          benchmark: 'analytics',
          metric: `p95 of a 30-day report ${query} (${dimensionsOf(query)} dimensions, ${body.data.length} rows, ${runs} runs, ${cpuPerRequest.toFixed(1)} ms CPU a request; baseline: p50 of the same GROUP BY on the raw facts)`,
          value: p95,
          unit: 'ms',
          baseline,
          ratio: baseline / p95,
          ...(targeted ? { target: `p95 <= ${TARGET_P95_MS} ms`, pass: p95 <= TARGET_P95_MS } : {}),
          dialect,
        });
      }
    } finally {
      await app.close();
    }
    const live = await db.transact((trx) =>
      createBrandWithFirstKey(trx, systemClock, { name: 'Bench Live' }, { rateLimitPerMinute: 100_000_000 }),
    );
    await measureFold(ctx, live.brand.id, startMs);
  } finally {
    await closeContext(ctx);
    if (schema && !keptSchema) await admin(`drop schema if exists ${schema} cascade`);
    if (!keptDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchAnalytics(): Promise<void> {
  console.log('\n# Click analytics: 1,000,000 clicks + 200,000 conversions, 30-day reports by dimension');
  // BENCH_DIALECTS=postgres runs one dialect alone (the load takes minutes per dialect).
  const dialects = (process.env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',');
  if (dialects.includes('sqlite')) await benchDialect('sqlite', null);
  if (!dialects.includes('postgres')) return;
  const pgUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
  if (!pgUrl) {
    console.log('  postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  await benchDialect('postgres', pgUrl);
}
