/**
 * Issue #20 benchmark: the retention sweep over large tables. 1,000,000 raw clicks and
 * 200,000 events with a finished delivery and an attempt each, all older than their
 * windows, then the worker's sweep batch by batch (RETENTION_BATCH_SIZE rows each): how long
 * each batch's transaction holds the writer (p50, p99, max, commit included) and how fast
 * the backlog goes. SQLite always; PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL
 * is set (in a fresh schema, dropped afterwards). Target: p99 of a batch <= 50 ms (on SQLite the time includes the batch's fsync), so a
 * request waiting behind one batch is delayed by no more than that.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { Trx } from '../src/db/types.js';
import { newId } from '../src/ids.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { deleteOldClicks, deleteOldDeliveries, deleteOldEvents } from '../src/modules/retention/sweep.js';
import { percentile, record } from './lib.js';

const CLICKS = 1_000_000;
const EVENTS = 200_000;
const ROWS_PER_INSERT = 1000;
const DAY_MS = 86_400_000;
const TARGET_P99_MS = 50;

/** Loads the backlog: CLICKS clicks and EVENTS events with a finished delivery and an attempt each, from `startMs` over 30 days. */
export async function loadRows(db: Database, startMs: number): Promise<void> {
  const insert = async (count: number, row: (i: number) => Record<string, unknown>, table: string) => {
    for (let first = 0; first < count; first += 50 * ROWS_PER_INSERT) {
      await db.admin.transaction().execute(async (trx) => {
        for (let start = first; start < Math.min(count, first + 50 * ROWS_PER_INSERT); start += ROWS_PER_INSERT) {
          const rows = [];
          for (let i = start; i < Math.min(count, start + ROWS_PER_INSERT); i++) rows.push(row(i));
          // Bulk rows of four tables through one helper: typed by name only.
          await sql`insert into ${sql.table(table)} (${sql.join(Object.keys(rows[0] ?? {}).map((c) => sql.ref(c)))}) values ${sql.join(rows.map((r) => sql`(${sql.join(Object.values(r))})`))}`.execute(
            trx,
          );
        }
      });
    }
  };
  const spread = 30 * DAY_MS;
  // The brand as `affitrack brands create` makes it, dated at the start of the backlog.
  const { brand } = await db.transact((trx) =>
    createBrandWithFirstKey(trx, { now: () => startMs }, { name: 'Bench Retention' }),
  );
  await insert(
    CLICKS,
    (i) => ({
      id: newId('clk', startMs + Math.floor((i * spread) / CLICKS)),
      brand_id: brand.id,
      offer_id: `off_bench_${i % 10}`,
      partner_id: `prt_bench_${i % 50}`,
      ip: `198.51.${(i >> 8) & 255}.${i & 255}`,
      user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0',
      referer: null,
      sub1: `campaign-${i % 20}`,
      fraud_score: i % 100,
      fraud_signals: '[]',
      high_risk: i % 100 > 90 ? 1 : 0,
      created_at: startMs + Math.floor((i * spread) / CLICKS),
    }),
    'clicks',
  );
  const eventIds: string[] = [];
  await insert(
    EVENTS,
    (i) => {
      const at = startMs + Math.floor((i * spread) / EVENTS);
      const id = newId('evt', at);
      eventIds[i] = id;
      return { id, brand_id: brand.id, type: 'partner.approved', payload: `{"id":"${id}"}`, created_at: at };
    },
    'events',
  );
  const deliveryIds: string[] = [];
  await insert(
    EVENTS,
    (i) => {
      const at = startMs + Math.floor((i * spread) / EVENTS);
      const id = newId('wh', at);
      deliveryIds[i] = id;
      return {
        id,
        brand_id: brand.id,
        kind: 'webhook',
        subscription_id: `sub_bench_${i % 20}`,
        event_id: eventIds[i],
        event: 'partner.approved',
        status: 'succeeded',
        attempt_count: 1,
        attempt_base: 0,
        next_attempt_at: null,
        created_at: at,
        updated_at: at,
      };
    },
    'webhook_deliveries',
  );
  await insert(
    EVENTS,
    (i) => ({
      delivery_id: deliveryIds[i],
      number: 1,
      attempted_at: startMs,
      status_code: 200,
      latency_ms: 12,
      response_body: 'ok',
      error: null,
      request_url: 'https://hooks.example/in',
      request_method: 'POST',
      request_headers: '{"content-type":"application/json"}',
      response_headers: '{"content-type":"text/plain"}',
    }),
    'webhook_attempts',
  );
  if (db.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
  else await sql`vacuum analyze clicks, events, webhook_deliveries, webhook_attempts`.execute(db.admin);
}

/** Sweeps one kind to the end, timing each batch's transaction; returns the batch times. */
async function sweepKind(
  db: Database,
  batch: (trx: Trx) => Promise<number>,
  expected: number,
): Promise<{ times: number[]; seconds: number }> {
  const times: number[] = [];
  let deleted = 0;
  const started = performance.now();
  for (;;) {
    const t = performance.now();
    const n = await db.transact(batch);
    times.push(performance.now() - t);
    deleted += n;
    if (n === 0) break;
  }
  if (deleted !== expected) throw new Error(`retention: deleted ${deleted} rows, expected ${expected}`);
  return { times: times.sort((a, b) => a - b), seconds: (performance.now() - started) / 1000 };
}

async function benchDialect(dialect: Dialect, databaseUrl: string | null): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-retention-'));
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
  const { retentionBatchSize: limit } = loadConfig({});
  try {
    await migrateToLatest(db);
    const now = Date.now();
    const startMs = now - 200 * DAY_MS;
    const loadStarted = performance.now();
    await loadRows(db, startMs);
    console.log(
      `  ${dialect}: ${CLICKS} clicks, ${EVENTS} events, deliveries and attempts loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`,
    );
    const cutoff = now - 90 * DAY_MS;
    const kinds = [
      { name: 'deliveries (+ attempts)', batch: (trx: Trx) => deleteOldDeliveries(trx, cutoff, limit), rows: EVENTS },
      { name: 'events', batch: (trx: Trx) => deleteOldEvents(trx, cutoff, limit), rows: EVENTS },
      { name: 'clicks', batch: (trx: Trx) => deleteOldClicks(trx, cutoff, limit), rows: CLICKS },
    ];
    for (const kind of kinds) {
      const { times, seconds } = await sweepKind(db, kind.batch, kind.rows);
      const p99 = percentile(times, 99);
      const label = `${kind.name}: writer held per batch of ${limit}`;
      record({ benchmark: 'retention', metric: `${label}, p50`, value: percentile(times, 50), unit: 'ms', dialect });
      record({
        benchmark: 'retention',
        metric: `${label}, p99`,
        value: p99,
        unit: 'ms',
        target: `p99 <= ${TARGET_P99_MS} ms`,
        pass: p99 <= TARGET_P99_MS,
        dialect,
      });
      record({ benchmark: 'retention', metric: `${label}, max`, value: times.at(-1) ?? 0, unit: 'ms', dialect });
      record({
        benchmark: 'retention',
        metric: `${kind.name}: rows deleted per second of sweeping (no pauses)`,
        value: Math.round(kind.rows / seconds),
        unit: 'rows/s',
        dialect,
      });
    }
  } finally {
    await db.close();
    if (schema) await admin(`drop schema if exists ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchRetention(): Promise<void> {
  console.log('\n# Retention: sweeping 1,000,000 clicks and 200,000 events with deliveries, batch by batch');
  await benchDialect('sqlite', null);
  const pgUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
  if (!pgUrl) {
    console.log('  postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  await benchDialect('postgres', pgUrl);
}
