/**
 * Issue benchmark: reports. 1,000,000 conversions over 90 days (20 offers, 500 partners,
 * ~70% approved / 20% pending / 10% rejected) with rollups filled consistently, then a
 * 30-day `GET /api/v1/reports?groupBy=day,offer` against the real app: 200 sequential
 * requests (p50/p95) and a short concurrent run. On SQLite always, on PostgreSQL when
 * BENCH_DATABASE_URL or TEST_DATABASE_URL is set (in a fresh schema, dropped afterwards).
 * Target: p95 <= 50 ms on each dialect.
 *
 * The app is built in-process (`createContext` + `buildApp`) on the loaded database, for
 * both dialects alike: the server command only knows the public PostgreSQL schema. Request
 * logs are written (to /dev/null), so their cost is paid as in production.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { rollUpLoadedFacts } from '../src/modules/analytics/bulkFold.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';
import { freePort, percentile, record } from './lib.js';

const CONVERSIONS = 1_000_000;
const OFFERS = 20;
const PARTNERS = 500;
const DAYS = 90;
const RANGE_DAYS = 30;
const SEQUENTIAL = 200;
const WARMUP = 20;
const TARGET_P95_MS = 50;
const DAY_MS = 86_400_000;
const SPAN_MS = DAYS * DAY_MS;

/** Conversions of one multi-row INSERT on SQLite (14 columns: 28,000 parameters of 32,766). */
const SQLITE_ROWS_PER_INSERT = 2000;
/** Rows per SQLite transaction during the load. */
const SQLITE_ROWS_PER_TRANSACTION = 100_000;

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const offerId = (o: number) => `off_bench_${pad(o, 2)}`;
const partnerId = (p: number) => `prt_bench_${pad(p, 3)}`;
const offerRevenue = (o: number) => 1000 + 50 * o;
const offerPayout = (o: number) => 600 + 25 * o;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Conversion i of the data set. The same formulas are written in SQL for PostgreSQL
 * (`loadPostgres`), so both dialects hold identical data and must report identical figures.
 * Offer: i mod 20; partner: (i div 20) mod 500, so every offer × partner pair recurs;
 * status: a multiplicative hash of i, 0-6 approved, 7-8 pending, 9 rejected; created_at:
 * spread evenly over the 90 days; local_day: its UTC day (the brand's zone is UTC).
 */
const statusDigit = (i: number) => Math.floor((Math.imul(i, 2654435761) >>> 0) / 256) % 10;

interface Dataset {
  brandId: string;
  apiKey: string;
  startMs: number;
  firstDay: string;
  from: string;
  to: string;
}

async function createBrandOffersPartners(db: Database, startMs: number): Promise<Dataset> {
  await migrateToLatest(db);
  const clock = systemClock;
  const now = clock.now();
  const { brandId, apiKey } = await db.transact(async (trx) => {
    const { brand, secret } = await createBrandWithFirstKey(
      trx,
      clock,
      { name: 'Bench Reports' },
      { rateLimitPerMinute: 100_000_000 },
    );
    await trx
      .insertInto('offers')
      .values(
        Array.from({ length: OFFERS }, (_, o) => ({
          id: offerId(o),
          brand_id: brand.id,
          name: `Offer ${o}`,
          destination_url: 'https://example.com/?c={click_id}',
          status: 'active' as const,
          currency: 'USD',
          revenue_cents: offerRevenue(o),
          payout_cents: offerPayout(o),
          conversion_status: 'pending' as const,
          hold_seconds: null,
          cap_daily: null,
          cap_weekly: null,
          cap_monthly: null,
          cap_global: null,
          fallback_url: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    await trx
      .insertInto('partners')
      .values(
        Array.from({ length: PARTNERS }, (_, p) => ({
          id: partnerId(p),
          brand_id: brand.id,
          name: `Partner ${p}`,
          email: `partner${p}@example.com`,
          website: null,
          status: 'active' as const,
          ban_reason: null,
          created_at: now,
          approved_at: now,
          banned_at: null,
          updated_at: now,
        })),
      )
      .execute();
    return { brandId: brand.id, apiKey: secret };
  });
  const lastDay = dayOf(startMs + SPAN_MS - 1);
  return {
    brandId,
    apiKey,
    startMs,
    firstDay: dayOf(startMs),
    from: dayOf(startMs + (DAYS - RANGE_DAYS) * DAY_MS),
    to: lastDay,
  };
}

const CONVERSION_COLUMNS = [
  'id',
  'brand_id',
  'offer_id',
  'partner_id',
  'status',
  'revenue_cents',
  'payout_cents',
  'currency',
  'external_txn_id',
  'cap_exceeded',
  'approved_at',
  'rejected_at',
  'local_day',
  'created_at',
];

/** Batched multi-row INSERTs on a direct connection to the file, in big transactions. */
function loadSqlite(file: string, data: Dataset): void {
  const raw = new SQLite(file);
  try {
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    const row = `(${CONVERSION_COLUMNS.map(() => '?').join(', ')})`;
    const insert = raw.prepare(
      `insert into conversions (${CONVERSION_COLUMNS.join(', ')}) values ${Array(SQLITE_ROWS_PER_INSERT).fill(row).join(', ')}`,
    );
    const days = Array.from({ length: DAYS }, (_, d) => dayOf(data.startMs + d * DAY_MS));
    const params: unknown[] = new Array(SQLITE_ROWS_PER_INSERT * CONVERSION_COLUMNS.length);
    const loadRange = raw.transaction((first: number, last: number) => {
      for (let start = first; start < last; start += SQLITE_ROWS_PER_INSERT) {
        let k = 0;
        for (let i = start; i < start + SQLITE_ROWS_PER_INSERT; i++) {
          const o = i % OFFERS;
          const s = statusDigit(i);
          const status = s < 7 ? 'approved' : s < 9 ? 'pending' : 'rejected';
          const createdAt = data.startMs + Math.floor((i * SPAN_MS) / CONVERSIONS);
          params[k++] = `conv_bench_${pad(i, 7)}`;
          params[k++] = data.brandId;
          params[k++] = offerId(o);
          params[k++] = partnerId(Math.floor(i / OFFERS) % PARTNERS);
          params[k++] = status;
          params[k++] = offerRevenue(o);
          params[k++] = offerPayout(o);
          params[k++] = 'USD';
          params[k++] = `txn_${pad(i, 7)}`;
          params[k++] = 0;
          params[k++] = status === 'approved' ? createdAt : null;
          params[k++] = status === 'rejected' ? createdAt : null;
          params[k++] = days[Math.floor((i * DAYS) / CONVERSIONS)];
          params[k++] = createdAt;
        }
        insert.run(params);
      }
    });
    for (let first = 0; first < CONVERSIONS; first += SQLITE_ROWS_PER_TRANSACTION) {
      loadRange(first, Math.min(CONVERSIONS, first + SQLITE_ROWS_PER_TRANSACTION));
    }
  } finally {
    raw.close();
  }
}

/** One INSERT … SELECT over generate_series, with the formulas of `loadSqlite`. */
async function loadPostgres(db: Database, data: Dataset): Promise<void> {
  await sql`
    insert into conversions (${sql.raw(CONVERSION_COLUMNS.join(', '))})
    select
      'conv_bench_' || lpad(i::text, 7, '0'),
      ${data.brandId},
      'off_bench_' || lpad((i % ${sql.lit(OFFERS)})::text, 2, '0'),
      'prt_bench_' || lpad(((i / ${sql.lit(OFFERS)}) % ${sql.lit(PARTNERS)})::text, 3, '0'),
      case when s < 7 then 'approved' when s < 9 then 'pending' else 'rejected' end,
      1000 + 50 * (i % ${sql.lit(OFFERS)}),
      600 + 25 * (i % ${sql.lit(OFFERS)}),
      'USD',
      'txn_' || lpad(i::text, 7, '0'),
      0,
      case when s < 7 then t end,
      case when s = 9 then t end,
      to_char(${sql.lit(data.firstDay)}::date + (i * ${sql.lit(DAYS)} / ${sql.lit(CONVERSIONS)})::int, 'YYYY-MM-DD'),
      t
    from (
      select
        i,
        ((i * 2654435761) % 4294967296) / 256 % 10 as s,
        ${sql.lit(data.startMs)}::bigint + i * ${sql.lit(SPAN_MS)}::bigint / ${sql.lit(CONVERSIONS)} as t
      from generate_series(0::bigint, ${sql.lit(CONVERSIONS - 1)}::bigint) as g(i)
    ) x`.execute(db.admin);
}

/** The rollups as the app would have maintained them: aggregated from the conversions. */
async function fillRollups(db: Database, brandId: string): Promise<void> {
  const counters = sql`0,
      sum(case when status = 'pending' then 1 else 0 end),
      sum(case when status = 'approved' then 1 else 0 end),
      sum(case when status = 'rejected' then 1 else 0 end),
      sum(case when status <> 'rejected' then revenue_cents else 0 end),
      sum(case when status <> 'rejected' then payout_cents else 0 end)`;
  const names = sql.raw('clicks, pending, approved, rejected, revenue_cents, payout_cents');
  await db.admin.transaction().execute(async (trx) => {
    // ~600,000 groups: let PostgreSQL aggregate in memory instead of spilling to disk.
    if (db.dialect === 'postgres') await sql`set local work_mem = '256MB'`.execute(trx);
    // Reports read the analytics rollups: one fact per conversion, folded as the worker would.
    await sql`
      insert into analytics_facts (brand_id, day, offer_id, partner_id, currency, ${names})
      select brand_id, local_day, offer_id, partner_id, currency, ${counters}
      from conversions where brand_id = ${brandId}
      group by brand_id, local_day, offer_id, partner_id, currency, id`.execute(trx);
    await rollUpLoadedFacts(trx, brandId);
  });
}

interface Totals {
  pending: number;
  approved: number;
  rejected: number;
  revenueCents: number;
  payoutCents: number;
}

/** The report's totals recomputed from the conversions themselves. */
async function directTotals(db: Database, data: Dataset): Promise<Totals> {
  const { rows } = await sql<Record<string, unknown>>`
    select
      sum(case when status = 'pending' then 1 else 0 end) as pending,
      sum(case when status = 'approved' then 1 else 0 end) as approved,
      sum(case when status = 'rejected' then 1 else 0 end) as rejected,
      sum(case when status <> 'rejected' then revenue_cents else 0 end) as revenue,
      sum(case when status <> 'rejected' then payout_cents else 0 end) as payout
    from conversions
    where brand_id = ${data.brandId} and local_day >= ${data.from} and local_day <= ${data.to}`.execute(db.read);
  const r = rows[0] ?? {};
  return {
    pending: Number(r.pending),
    approved: Number(r.approved),
    rejected: Number(r.rejected),
    revenueCents: Number(r.revenue),
    payoutCents: Number(r.payout),
  };
}

interface ReportBody {
  data: unknown[];
  totals: Totals & Record<string, number>;
}

/** Serves the loaded database in-process and measures the report. Returns its body. */
async function measure(dialect: Dialect, db: Database, data: Dataset, dataDir: string): Promise<ReportBody> {
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' });
  const ctx = createContext(config, {
    db,
    logger: createLogger(config, pino.destination({ dest: '/dev/null', sync: false })),
  });
  const app = await buildApp(ctx);
  await app.listen({ port, host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${port}/api/v1/reports?from=${data.from}&to=${data.to}&groupBy=day,offer`;
    const headers = { authorization: `Bearer ${data.apiKey}` };
    let body: ReportBody | null = null;
    const once = async () => {
      const res = await fetch(url, { headers });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`report: ${res.status} ${text}`);
      return text;
    };
    for (let i = 0; i < WARMUP; i++) body = JSON.parse(await once()) as ReportBody;
    const times: number[] = [];
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < SEQUENTIAL; i++) {
      const started = performance.now();
      await once();
      times.push(performance.now() - started);
    }
    // CPU of this process per request (the app, the fetch client and V8's GC helper threads,
    // so it can exceed the latency): unlike latency, it barely moves when other work shares
    // the machine.
    const cpu = process.cpuUsage(cpuBefore);
    const cpuPerRequest = (cpu.user + cpu.system) / 1000 / SEQUENTIAL;
    times.sort((a, b) => a - b);
    const p50 = percentile(times, 50);
    const p95 = percentile(times, 95);

    // Concurrent load; autocannon runs in a worker thread so it does not share the app's event loop.
    const loaded = await autocannon({ url, headers, connections: 10, duration: 3, workers: 1 });
    if (loaded.non2xx > 0 || loaded.errors > 0) {
      throw new Error(`report under load: ${loaded.non2xx} non-2xx, ${loaded.errors} errors`);
    }

    record({
      benchmark: 'reports',
      metric: `p50 latency (${SEQUENTIAL} sequential, 30 days by day,offer)`,
      value: p50,
      unit: 'ms',
      dialect,
    });
    record({
      benchmark: 'reports',
      metric: `p95 latency (${SEQUENTIAL} sequential, 30 days by day,offer)`,
      value: p95,
      unit: 'ms',
      target: `p95 <= ${TARGET_P95_MS} ms`,
      pass: p95 <= TARGET_P95_MS,
      dialect,
    });
    record({
      benchmark: 'reports',
      metric: 'CPU per request (sequential, app + client)',
      value: cpuPerRequest,
      unit: 'ms',
      dialect,
    });
    record({
      benchmark: 'reports',
      metric: 'req/s (10 connections)',
      value: loaded.requests.average,
      unit: 'req/s',
      dialect,
    });
    record({
      benchmark: 'reports',
      metric: 'p50 latency (10 connections)',
      value: loaded.latency.p50,
      unit: 'ms',
      dialect,
    });
    record({
      benchmark: 'reports',
      metric: 'p99 latency (10 connections)',
      value: loaded.latency.p99,
      unit: 'ms',
      dialect,
    });
    if (!body) throw new Error('report: no answer');
    return body;
  } finally {
    await app.close();
    await closeContext(ctx);
  }
}

async function checkCount(db: Database): Promise<void> {
  const res = await sql<{ n: number }>`select count(*) as n from conversions`.execute(db.read);
  const count = Number(res.rows[0]?.n);
  if (count !== CONVERSIONS) throw new Error(`reports: loaded ${count} conversions, expected ${CONVERSIONS}`);
}

async function benchDialect(dialect: Dialect, databaseUrl: string | null, startMs: number): Promise<ReportBody> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-reports-'));
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
  let db: Database | null = new Database({ databaseUrl, dataDir, schema });
  try {
    const data = await createBrandOffersPartners(db, startMs);
    let started = performance.now();
    if (dialect === 'sqlite') loadSqlite(path.join(dataDir, 'affitrack.db'), data);
    else await loadPostgres(db, data);
    const loadSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    await fillRollups(db, data.brandId);
    // Settle the load before measuring, as a server would be some time after it: on SQLite
    // fold the WAL back into the file; on PostgreSQL do what autovacuum soon would (statistics;
    // visibility map of the rollups the report reads) and flush the dirty pages, so neither
    // runs in the middle of the timing.
    if (dialect === 'sqlite') {
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
    } else {
      await sql`vacuum analyze analytics_facts, analytics_rollups`.execute(db.admin);
      await sql`analyze brands, api_keys, offers, partners, conversions`.execute(db.admin);
      // Needs superuser or pg_checkpoint; without it the measurement just runs alongside the flush.
      await sql`checkpoint`.execute(db.admin).catch(() => console.log('  postgres: checkpoint not permitted'));
    }
    const rollupSeconds = (performance.now() - started) / 1000;
    console.log(
      `  ${dialect}: ${CONVERSIONS} conversions loaded in ${loadSeconds.toFixed(1)} s, ` +
        `rollups and settling in ${rollupSeconds.toFixed(1)} s`,
    );
    await checkCount(db);
    const expected = await directTotals(db, data);
    const owned = db;
    db = null; // closed by measure()
    const body = await measure(dialect, owned, data, dataDir);
    const got = body.totals;
    const keys = ['pending', 'approved', 'rejected', 'revenueCents', 'payoutCents'] as const;
    if (body.data.length !== RANGE_DAYS * OFFERS || keys.some((k) => got[k] !== expected[k])) {
      throw new Error(
        `reports (${dialect}): ${body.data.length} rows, totals ${JSON.stringify(got)}; ` +
          `expected ${RANGE_DAYS * OFFERS} rows, totals ${JSON.stringify(expected)} from the conversions`,
      );
    }
    return body;
  } finally {
    await db?.close();
    if (schema) await admin(`drop schema if exists ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchReports(): Promise<void> {
  console.log('\n# Reports: 1,000,000 conversions, 30-day report grouped by day,offer');
  const pgUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
  // The data ends with today (UTC), so the report's 30 days are the most recent ones. Both
  // dialects get the same days even if the run crosses midnight.
  const now = new Date();
  const startMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (DAYS - 1) * DAY_MS;
  const sqliteBody = await benchDialect('sqlite', null, startMs);
  if (!pgUrl) {
    console.log('  postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  const pgBody = await benchDialect('postgres', pgUrl, startMs);
  // Both dialects hold the same data (same formulas), so the reports must agree exactly.
  if (!isDeepStrictEqual(sqliteBody, pgBody)) {
    throw new Error('reports: SQLite and PostgreSQL answer the same report differently');
  }
}
