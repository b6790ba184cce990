/**
 * Issue #15 benchmark: click analytics at scale. 1,000,000 clicks and 200,000 conversions
 * over 30 days (10 offers in USD and EUR, 50 partners, ~30 countries, 4 device types, 6 OS,
 * 6 browsers, 20 referrer hosts, sub1 from 20 values) as analytics facts, folded into the
 * rollups; then one- and two-dimension 30-day reports through the real app (`inject`),
 * p50/p95 over sequential requests, beside a same-run baseline: the same GROUP BY on the raw
 * facts (one row per click or conversion). SQLite always; PostgreSQL when BENCH_DATABASE_URL
 * or TEST_DATABASE_URL is set (in a fresh schema, dropped afterwards). Target: p95 <= 50 ms.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { ATTRIBUTE_COLUMN, type Attribute, isAttribute } from '../src/modules/analytics/dimensions.js';
import type { FactRow } from '../src/modules/analytics/facts.js';
import { rollUpLoadedFacts } from '../src/modules/analytics/fold.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';
import { percentile, record } from './lib.js';

const CLICKS = 1_000_000;
const CONVERSIONS = 200_000;
const DAYS = 30;
const OFFERS = 10;
const PARTNERS = 50;
const SEQUENTIAL = 40;
const WARMUP = 5;
const BASELINE_RUNS = 5;
const TARGET_P95_MS = 50;
const ROWS_PER_INSERT = 1000;
const DAY_MS = 86_400_000;

const COUNTRIES =
  'US,US,US,US,DE,DE,DE,GB,GB,FR,FR,IN,IN,BR,CA,AU,JP,NL,ES,IT,PL,SE,MX,TR,KR,ZA,AR,BE,CH,AT,IE,PT'.split(',');
const DEVICES = ['desktop', 'desktop', 'mobile', 'mobile', 'mobile', 'tablet', 'bot'];
const OSES = ['Windows', 'Mac OS', 'iOS', 'Android', 'Linux', 'Chrome OS'];
const BROWSERS = ['Chrome', 'Mobile Safari', 'Safari', 'Firefox', 'Edge', 'Samsung Browser'];

/** The reports measured: every one covers the whole 30 days. */
const REPORTS = [
  'groupBy=country',
  'groupBy=deviceType',
  'groupBy=sub1',
  'groupBy=hour',
  'groupBy=day',
  'groupBy=day,country',
  'groupBy=offer,browser',
  'groupBy=partner,deviceType',
  'groupBy=country&deviceType=mobile',
  'groupBy=country,deviceType',
];

/** A deterministic pseudo-random pick (multiplicative hash), so both dialects hold the same data. */
const pick = <T>(list: readonly T[], i: number, salt: number): T =>
  list[(Math.imul(i + salt, 2654435761) >>> 8) % list.length] as T;
const pad = (n: number, width: number) => String(n).padStart(width, '0');

function fact(i: number, startMs: number, conversion: boolean): FactRow {
  const at = startMs + Math.floor((i * DAYS * DAY_MS) / (conversion ? CONVERSIONS : CLICKS));
  const offer = i % OFFERS;
  const status = conversion ? (Math.imul(i, 40503) >>> 4) % 10 : -1;
  const counted = status >= 0 && status < 9;
  return {
    brand_id: '',
    day: new Date(at).toISOString().slice(0, 10),
    hour: pad(new Date(at).getUTCHours(), 2),
    offer_id: `off_bench_${pad(offer, 2)}`,
    partner_id: `prt_bench_${pad(Math.floor(i / OFFERS) % PARTNERS, 2)}`,
    currency: offer < 8 ? 'USD' : 'EUR',
    country: pick(COUNTRIES, i, 1),
    device_type: pick(DEVICES, i, 2),
    os: pick(OSES, i, 3),
    browser: pick(BROWSERS, i, 4),
    referrer_host: i % 3 === 0 ? null : `site${(Math.imul(i, 97) >>> 3) % 20}.example`,
    sub1: `campaign-${(Math.imul(i, 31) >>> 2) % 20}`,
    sub2: i % 2 === 0 ? `placement-${i % 5}` : null,
    sub3: null,
    sub4: null,
    sub5: null,
    clicks: conversion ? 0 : 1,
    pending: status >= 7 && status < 9 ? 1 : 0,
    approved: status >= 0 && status < 7 ? 1 : 0,
    rejected: status === 9 ? 1 : 0,
    revenue_cents: counted ? 1000 + 50 * offer : 0,
    payout_cents: counted ? 400 + 20 * offer : 0,
  };
}

async function load(db: Database, brandId: string, startMs: number): Promise<void> {
  const total = CLICKS + CONVERSIONS;
  for (let first = 0; first < total; first += 100 * ROWS_PER_INSERT) {
    await db.admin.transaction().execute(async (trx) => {
      for (let start = first; start < Math.min(total, first + 100 * ROWS_PER_INSERT); start += ROWS_PER_INSERT) {
        const rows = [];
        for (let i = start; i < Math.min(total, start + ROWS_PER_INSERT); i++) {
          const row = i < CLICKS ? fact(i, startMs, false) : fact(i - CLICKS, startMs, true);
          row.brand_id = brandId;
          rows.push(row);
        }
        await trx.insertInto('analytics_facts').values(rows).execute();
      }
    });
  }
  await db.admin.transaction().execute(async (trx) => {
    if (db.dialect === 'postgres') await sql`set local work_mem = '256MB'`.execute(trx);
    await rollUpLoadedFacts(trx, brandId);
  });
  if (db.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
  else await sql`vacuum analyze analytics_facts, analytics_rollups`.execute(db.admin);
}

/** The same grouping, straight from the raw facts: what a report without rollups would run. */
async function rawReport(db: Database, brandId: string, query: string, from: string, to: string): Promise<number> {
  const params = new URLSearchParams(query);
  const keys = (params.get('groupBy') ?? '').split(',').filter(Boolean);
  const columns = keys
    .map((k) => (isAttribute(k) ? ATTRIBUTE_COLUMN[k as Attribute] : `${k}_id`))
    .map((c) => sql.ref(c));
  const filters = [sql`brand_id = ${brandId}`, sql`day >= ${from}`, sql`day <= ${to}`];
  for (const [name, value] of params) {
    if (isAttribute(name)) filters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[name])} = ${value}`);
  }
  const started = performance.now();
  await sql`
    select ${sql.join([...columns, sql`currency`, sql`sum(clicks)`, sql`sum(pending)`, sql`sum(approved)`, sql`sum(revenue_cents)`])}
    from analytics_facts where ${sql.join(filters, sql` and `)}
    group by ${sql.join([...columns, sql.ref('currency')])}`.execute(db.read);
  return performance.now() - started;
}

async function benchDialect(dialect: Dialect, databaseUrl: string | null): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-analytics-'));
  const schema = databaseUrl ? `bench_${randomBytes(6).toString('hex')}` : undefined;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl ?? undefined });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  if (schema) await admin(`create schema ${schema}`);
  const db = new Database({ databaseUrl, dataDir, schema });
  const now = new Date();
  const startMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (DAYS - 1) * DAY_MS;
  const from = new Date(startMs).toISOString().slice(0, 10);
  const to = new Date(startMs + (DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  const ctx = createContext(config, {
    db,
    logger: createLogger(config, pino.destination({ dest: '/dev/null', sync: false })),
  });
  try {
    await migrateToLatest(db);
    const { brand, secret } = await db.transact((trx) =>
      createBrandWithFirstKey(trx, systemClock, { name: 'Bench Analytics' }, { rateLimitPerMinute: 100_000_000 }),
    );
    const started = performance.now();
    await load(db, brand.id, startMs);
    console.log(
      `  ${dialect}: ${CLICKS} clicks and ${CONVERSIONS} conversions loaded and rolled up in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const app = await buildApp(ctx);
    try {
      for (const query of REPORTS) {
        const url = `/api/v1/reports?from=${from}&to=${to}&${query}`;
        const once = async () => {
          const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secret}` } });
          if (res.statusCode !== 200) throw new Error(`analytics report ${query}: ${res.statusCode} ${res.body}`);
          return res.json();
        };
        const body = await once();
        if (query === 'groupBy=country' && body.totals.clicks !== CLICKS) {
          throw new Error(`analytics: report counts ${body.totals.clicks} clicks, loaded ${CLICKS}`);
        }
        for (let i = 0; i < WARMUP; i++) await once();
        const times: number[] = [];
        for (let i = 0; i < SEQUENTIAL; i++) {
          const t = performance.now();
          await once();
          times.push(performance.now() - t);
        }
        const raw: number[] = [];
        for (let i = 0; i < BASELINE_RUNS; i++) raw.push(await rawReport(db, brand.id, query, from, to));
        times.sort((a, b) => a - b);
        raw.sort((a, b) => a - b);
        const p95 = percentile(times, 95);
        const baseline = percentile(raw, 50);
        record({
          benchmark: 'analytics',
          metric: `p95 of a 30-day report ${query} (${body.data.length} rows; baseline: p50 of the same GROUP BY on the raw facts)`,
          value: p95,
          unit: 'ms',
          baseline,
          ratio: baseline / p95,
          target: `p95 <= ${TARGET_P95_MS} ms`,
          pass: p95 <= TARGET_P95_MS,
          dialect,
        });
      }
    } finally {
      await app.close();
    }
  } finally {
    await closeContext(ctx);
    if (schema) await admin(`drop schema if exists ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchAnalytics(): Promise<void> {
  console.log('\n# Click analytics: 1,000,000 clicks + 200,000 conversions, 30-day reports by dimension');
  await benchDialect('sqlite', null);
  const pgUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
  if (!pgUrl) {
    console.log('  postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  await benchDialect('postgres', pgUrl);
}
