/**
 * Issue benchmark: conversion ingest. `POST /api/v1/conversions` from 50 concurrent clients
 * against the real server on SQLite, every request with its own externalTxnId, and in the
 * same run a baseline of raw durable single-row inserts (one commit, one fsync each) into a
 * SQLite file in the same directory with the same pragmas.
 * Target: >= 3,000 conversions/s and >= 0.5 of the baseline's rows/s; afterwards every
 * accepted (201) conversion is in the database with exactly one `conversion.created` event.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';
import { createBenchBrand, freePort, ROOT, record, startProcess, stopProcess } from './lib.js';

const CONNECTIONS = 50;
const TARGET_SECONDS = 8;
/** Warm-up rounds (JIT, caches); the last round's rate sizes the measured run. */
const WARMUP_ROUNDS = 3;
const WARMUP_REQUESTS = 2000;
const BASELINE_MS = 5000;
const TARGET_RATE = 3000;
const TARGET_RATIO = 0.5;

interface IngestRun {
  created: number;
  other: Record<string, number>;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
}

/**
 * Sends exactly `amount` conversions. A fixed amount (not a duration) makes autocannon wait
 * for every answer, so no request is cut off in flight: each conversion the server commits
 * is answered and counted, and the database count must then equal the 201s exactly.
 */
async function ingest(
  base: string,
  headers: Record<string, string>,
  amount: number,
  body: (n: number) => string,
): Promise<IngestRun> {
  let n = 0;
  const started = performance.now();
  let lastAnswer = started;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: base,
        connections: CONNECTIONS,
        amount,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/conversions',
            headers,
            setupRequest: (request) => ({ ...request, body: body(n++) }),
          },
        ],
      },
      (error, done) => (error ? reject(error) : resolve(done)),
    );
    instance.on('response', () => {
      lastAnswer = performance.now();
    });
  });
  // Up to the last answer: autocannon itself only reports on its next whole-second tick.
  const seconds = (lastAnswer - started) / 1000;
  const other: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats as Record<string, { count: number }>)) {
    if (code !== '201') other[code] = stats.count;
  }
  return {
    created: (result.statusCodeStats as Record<string, { count: number }>)['201']?.count ?? 0,
    other,
    errors: result.errors + result.timeouts,
    seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux); null elsewhere.
 * CPU per conversion stays comparable when other work shares the machine and rates do not.
 */
function cpuMs(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : null; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/** Raw durable single-row inserts for `ms`: the fsync-bound rate one committer can reach. */
function baselineInserts(file: string, ms: number): number {
  const db = new SQLite(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(`
      create table conversions (
        id text primary key, brand_id text not null, offer_id text not null, partner_id text not null,
        click_id text, status text not null, revenue_cents bigint not null, payout_cents bigint not null,
        currency text not null, sub1 text, sub2 text, sub3 text, sub4 text, sub5 text, external_txn_id text,
        cap_exceeded integer not null default 0, hold_until bigint, approved_at bigint, approved_by text,
        rejected_at bigint, rejection_reason text, local_day text not null, created_at bigint not null);
      create unique index conversions_offer_txn_uq on conversions (offer_id, external_txn_id);`);
    const insert = db.prepare(
      `insert into conversions (id, brand_id, offer_id, partner_id, status, revenue_cents, payout_cents, currency,
         external_txn_id, local_day, created_at) values (?, 'brd_1', 'off_1', 'prt_1', 'pending', 1000, 600, 'USD', ?, ?, ?)`,
    );
    let rows = 0;
    const started = performance.now();
    // Autocommit: every statement is its own transaction, committed durably (synchronous=FULL).
    while (performance.now() - started < ms) {
      const now = Date.now();
      insert.run(`conv_${rows}`, `txn-${rows}`, new Date(now).toISOString().slice(0, 10), now);
      rows += 1;
    }
    return rows / ((performance.now() - started) / 1000);
  } finally {
    db.close();
  }
}

function verify(file: string, created: number): void {
  const db = new SQLite(file, { readonly: true });
  try {
    const count = (query: string) => (db.prepare(query).get() as { n: number }).n;
    const conversions = count('select count(*) as n from conversions');
    const events = count(`select count(*) as n from events where type = 'conversion.created'`);
    const matched = count(`
      select count(distinct c.id) as n
      from (select json_extract(payload, '$.data.conversionId') as cid from events where type = 'conversion.created') e
      join conversions c on c.id = e.cid`);
    const inRollups = count('select coalesce(sum(pending + approved), 0) as n from analytics_facts');
    console.log(
      `  verify: ${created} answered 201, ${conversions} conversions, ${events} conversion.created events ` +
        `(${matched} matching a conversion), rollups count ${inRollups}`,
    );
    if (conversions !== created || events !== conversions || matched !== conversions || inRollups !== conversions) {
      throw new Error(
        `conversion ingest: ${created} answered 201 but the database holds ${conversions} conversions, ` +
          `${events} conversion.created events (${matched} matching), rollups counting ${inRollups}`,
      );
    }
  } finally {
    db.close();
  }
}

export async function benchConversionIngest(): Promise<void> {
  console.log('\n# Conversion ingest: POST /api/v1/conversions (50 clients) vs raw durable single-row inserts');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-ingest-'));
  const port = await freePort();
  const env = { DATA_DIR: dataDir, DATABASE_URL: '', PORT: String(port), LOG_LEVEL: 'info' };
  const base = `http://127.0.0.1:${port}`;
  try {
    const key = await createBenchBrand('Bench Ingest', env);
    const headers = { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' };
    const server = await startProcess([path.join(ROOT, 'bench/apiOnlyServer.mjs')], env, `${base}/health`);
    let created = 0;
    let main: IngestRun;
    let cpuPerConversion: number | null = null;
    try {
      const post = async (url: string, body: unknown) => {
        const res = await fetch(`${base}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
        if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
        return (await res.json()) as { id: string };
      };
      const offer = await post('/api/v1/offers', {
        name: 'Bench offer',
        destinationUrl: 'https://example.com/?c={click_id}',
        revenueCents: 1000,
        payoutCents: 600,
      });
      const partner = await post('/api/v1/partners', { name: 'Bench partner', email: 'partner@example.com' });
      const body = (prefix: string) => (n: number) =>
        JSON.stringify({ offerId: offer.id, partnerId: partner.id, externalTxnId: `${prefix}-${n}` });

      const warmups: IngestRun[] = [];
      for (let round = 0; round < WARMUP_ROUNDS; round++) {
        const warm = await ingest(base, headers, WARMUP_REQUESTS, body(`warm${round}`));
        created += warm.created;
        warmups.push(warm);
      }
      const warm = warmups[warmups.length - 1] as IngestRun;
      // Sized from the warmest round's rate so the measured run lasts about TARGET_SECONDS.
      const amount = Math.min(200_000, Math.max(5_000, Math.round((warm.created / warm.seconds) * TARGET_SECONDS)));
      const cpuBefore = cpuMs(server.pid);
      main = await ingest(base, headers, amount, body('txn'));
      const cpuAfter = cpuMs(server.pid);
      if (cpuBefore !== null && cpuAfter !== null) cpuPerConversion = ((cpuAfter - cpuBefore) * 1000) / main.created;
      created += main.created;
      for (const run of [...warmups, main]) {
        if (Object.keys(run.other).length > 0 || run.errors > 0) {
          throw new Error(`conversion ingest: non-201 answers ${JSON.stringify(run.other)}, ${run.errors} errors`);
        }
      }
      console.log(
        `  warm-up ${warmups.map((w) => `${w.created} in ${w.seconds.toFixed(1)} s`).join(', ')}; ` +
          `measured ${main.created} in ${main.seconds.toFixed(1)} s`,
      );
    } finally {
      await stopProcess(server);
    }
    verify(path.join(dataDir, 'affitrack.db'), created);

    const baseline = baselineInserts(path.join(dataDir, 'baseline.db'), BASELINE_MS);
    const rate = main.created / main.seconds;
    const ratio = rate / baseline;
    record({
      benchmark: 'conversion-ingest',
      metric: 'conversions/s',
      value: rate,
      unit: 'conv/s',
      baseline,
      ratio,
      target: `>= ${TARGET_RATE}/s and ratio >= ${TARGET_RATIO}`,
      pass: rate >= TARGET_RATE && ratio >= TARGET_RATIO,
      dialect: 'sqlite',
    });
    record({
      benchmark: 'conversion-ingest',
      metric: 'baseline durable single-row inserts',
      value: baseline,
      unit: 'rows/s',
      dialect: 'sqlite',
    });
    if (cpuPerConversion !== null) {
      record({
        benchmark: 'conversion-ingest',
        metric: 'server CPU per conversion',
        value: cpuPerConversion,
        unit: 'µs',
        dialect: 'sqlite',
      });
    }
    record({ benchmark: 'conversion-ingest', metric: 'p50 latency', value: main.p50, unit: 'ms', dialect: 'sqlite' });
    record({ benchmark: 'conversion-ingest', metric: 'p99 latency', value: main.p99, unit: 'ms', dialect: 'sqlite' });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
