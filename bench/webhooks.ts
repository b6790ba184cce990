/**
 * Issue benchmark: the webhook dispatcher on SQLite, in process, against a receiver in a
 * child process (node:http, answers 200 at once, counts requests).
 * - Throughput: N events (one signed delivery each) queued before the dispatcher starts;
 *   time until every delivery is 'succeeded' (and its attempt logged). Baseline in the same
 *   run: raw undici POSTs of the same stored bodies at the same concurrency to the same
 *   receiver. Target: >= 2,000 deliveries/s and >= 0.5 of the baseline.
 * - Latency at 500 events/s (one event per transaction): commit (the transact promise
 *   resolving) to the first attempt reaching the receiver. Target: p50 <= 20 ms, p99 <= 100 ms.
 * - Isolation: a second subscription on the same event whose receiver never answers (the
 *   attempts time out after WEBHOOK_TIMEOUT); the fast receiver's throughput may drop <= 10 %.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { insertBrand } from '../src/modules/brands/service.js';
import { Dispatcher } from '../src/modules/deliveries/dispatcher.js';
import { recordEvent } from '../src/modules/events/outbox.js';
import { createSubscription } from '../src/modules/webhooks/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';
import { freePort, percentile, record, startProcess, stopProcess } from './lib.js';

const MAX_EVENTS = 20_000;
const MIN_EVENTS = 5_000;
const WARMUP_EVENTS = 3_000;
/** Each measured dispatch run is sized to last about this long. */
const RUN_SECONDS = 8;
const ISOLATION_MIN_LIMIT_MS = 20_000;
const EVENTS_PER_TRANSACTION = 2_000;
const LATENCY_RATE = 500;
const LATENCY_MS = 6_000;
const TARGET_RATE = 2000;
const TARGET_RATIO = 0.5;
const TARGET_P50 = 20;
const TARGET_P99 = 100;
const TARGET_DROP = 10;
const WAIT_LIMIT_MS = 60_000;

/**
 * The receivers, in their own process: FAST_PORT answers 200 at once and counts requests
 * (signed ones too) and, while recording, each request's arrival time by event id;
 * SLOW_PORT reads the request and never answers.
 */
const RECEIVER = `
const http = require('node:http');
let fast = 0, signed = 0, slow = 0, recording = false, arrivals = [];
const fastServer = http.createServer((req, res) => {
  if (req.url === '/hook') {
    const at = Date.now();
    fast++;
    if (req.headers['x-service-signature']) signed++;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
    if (!recording) { req.resume(); return; }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => arrivals.push([JSON.parse(Buffer.concat(chunks).toString()).id, at]));
    return;
  }
  let answer = {};
  if (req.url === '/count') answer = { fast, signed, slow, recorded: arrivals.length };
  else if (req.url === '/reset') { fast = 0; signed = 0; slow = 0; }
  else if (req.url === '/record/start') { recording = true; arrivals = []; }
  else if (req.url === '/record/stop') { recording = false; answer = arrivals; arrivals = []; }
  const body = JSON.stringify(answer);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
fastServer.keepAliveTimeout = 30000;
fastServer.listen(Number(process.env.FAST_PORT), '127.0.0.1');
const slowServer = http.createServer((req) => { slow++; req.resume(); });
slowServer.requestTimeout = 0;
slowServer.listen(Number(process.env.SLOW_PORT), '127.0.0.1');
`;

/** The receivers' ports, free when the benchmark starts (`benchWebhooks`). */
const receiverPorts = { fast: 0, slow: 0 };
const fastUrl = () => `http://127.0.0.1:${receiverPorts.fast}/hook`;
const slowUrl = () => `http://127.0.0.1:${receiverPorts.slow}/hook`;

interface Counts {
  fast: number;
  signed: number;
  slow: number;
  /** Arrivals recorded (bodies read) since record/start. */
  recorded: number;
}

async function control<T>(what: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${receiverPorts.fast}/${what}`);
  return (await res.json()) as T;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, check: () => Promise<boolean> | boolean, everyMs: number): Promise<void> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`webhooks benchmark: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

interface Env {
  ctx: AppContext;
  dataDir: string;
  brandId: string;
  fastSubscriptionId: string;
}

async function createEnv(withSlowReceiver: boolean): Promise<Env> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-webhooks-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_TIMEOUT: '2s',
  });
  const devNull = new Writable({ write: (_chunk, _encoding, done) => done() });
  const ctx = createContext(config, { logger: createLogger(config, devNull) });
  try {
    await migrateToLatest(ctx.db);
    const brand = await ctx.db.transact((trx) => insertBrand(trx, ctx.clock, { name: 'Bench Webhooks' }));
    const events: ['partner.approved'] = ['partner.approved'];
    const fast = await createSubscription(ctx, brand.id, { url: fastUrl(), events, secret: 'bench-fast-secret' });
    if (withSlowReceiver) {
      await createSubscription(ctx, brand.id, { url: slowUrl(), events, secret: 'bench-slow-secret' });
    }
    return { ctx, dataDir, brandId: brand.id, fastSubscriptionId: fast.id };
  } catch (error) {
    await closeContext(ctx);
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

async function closeEnv(env: Env): Promise<void> {
  await closeContext(env.ctx);
  rmSync(env.dataDir, { recursive: true, force: true });
}

function partnerApproved(n: number) {
  return {
    partnerId: `prt_bench${n}`,
    name: `Bench Partner ${n}`,
    email: `partner${n}@example.com`,
    website: 'https://partner.example.com',
    status: 'active' as const,
  };
}

/** Queues `count` events (one delivery per subscription each) in a few big transactions; returns their ids. */
async function queueEvents(env: Env, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += EVENTS_PER_TRANSACTION) {
    const size = Math.min(EVENTS_PER_TRANSACTION, count - done);
    const batch = await env.ctx.db.transact(async (trx) => {
      const batchIds: string[] = [];
      for (let i = 0; i < size; i++) {
        const event = await recordEvent(env.ctx, trx, env.brandId, 'partner.approved', partnerApproved(done + i));
        batchIds.push(event.id);
      }
      return batchIds;
    });
    ids.push(...batch);
  }
  return ids;
}

async function fastSucceeded(env: Env): Promise<number> {
  const row = await env.ctx.db.read
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('subscription_id', '=', env.fastSubscriptionId)
    .where('status', '=', 'succeeded')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

interface DispatchRun {
  delivered: number;
  seconds: number;
  complete: boolean;
}

/**
 * Starts a dispatcher on the queued deliveries and measures until the fast receiver's
 * `expected` deliveries are all 'succeeded' (on top of those that already were), or until
 * `limitMs` has passed (then `complete` is false and `delivered` says how far it got). The
 * receiver's count is polled cheaply over HTTP first, so the benchmark does not load the
 * dispatcher's database; the database is checked at the end.
 */
async function dispatchAll(env: Env, expected: number, limitMs = WAIT_LIMIT_MS): Promise<DispatchRun> {
  const already = await fastSucceeded(env);
  await control('reset');
  const controller = new AbortController();
  const started = performance.now();
  const deadline = started + limitMs;
  const running = new Dispatcher(env.ctx).run(controller.signal);
  try {
    while ((await control<Counts>('count')).fast < expected && performance.now() < deadline) await sleep(25);
    let delivered = (await fastSucceeded(env)) - already;
    while (delivered < expected && performance.now() < deadline) {
      await sleep(5);
      delivered = (await fastSucceeded(env)) - already;
    }
    return { delivered, seconds: (performance.now() - started) / 1000, complete: delivered >= expected };
  } finally {
    controller.abort();
    await running;
  }
}

/** Raw undici POSTs of `bodies` with `concurrency` requests in flight; returns requests/s. */
async function baselinePosts(bodies: string[], concurrency: number): Promise<number> {
  const agent = new Agent({ keepAliveTimeout: 4000, connections: 256 });
  const url = new URL(fastUrl());
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        dispatcher: agent,
      });
      await res.body.text();
      if (res.statusCode !== 200) failed += 1;
    }
  };
  try {
    const started = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    const seconds = (performance.now() - started) / 1000;
    if (failed > 0) throw new Error(`webhooks baseline: ${failed} non-200 answers`);
    return bodies.length / seconds;
  } finally {
    await agent.close();
  }
}

async function storedPayloads(env: Env, ids: string[]): Promise<string[]> {
  const rows = await env.ctx.db.read
    .selectFrom('events')
    .select('payload')
    .where('id', '>=', ids[0] ?? '')
    .where('id', '<=', ids[ids.length - 1] ?? '')
    .orderBy('id')
    .execute();
  if (rows.length !== ids.length)
    throw new Error(`webhooks: expected ${ids.length} stored events, found ${rows.length}`);
  return rows.map((r) => r.payload);
}

/** Every succeeded delivery of the fast subscription has exactly one logged 200 attempt. */
async function verifyLogged(env: Env, expected: number): Promise<void> {
  const row = await env.ctx.db.read
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('d.subscription_id', '=', env.fastSubscriptionId)
    .where('a.status_code', '=', 200)
    .executeTakeFirstOrThrow();
  const counts = await control<Counts>('count');
  if (Number(row.n) !== expected || counts.signed !== counts.fast) {
    throw new Error(
      `webhooks: expected ${expected} logged 200 attempts, found ${row.n}; ` +
        `${counts.signed} of ${counts.fast} requests signed`,
    );
  }
}

/** Events at LATENCY_RATE/s, one per transaction, with a dispatcher running; commit-to-arrival times. */
async function measureLatency(env: Env): Promise<number[]> {
  const controller = new AbortController();
  const running = new Dispatcher(env.ctx).run(controller.signal);
  const committedAt = new Map<string, number>();
  try {
    await control('record/start');
    const pending: Promise<void>[] = [];
    const started = performance.now();
    let sent = 0;
    for (;;) {
      const elapsed = performance.now() - started;
      if (elapsed >= LATENCY_MS) break;
      const due = Math.floor((elapsed * LATENCY_RATE) / 1000);
      for (; sent < due; sent++) {
        const n = sent;
        pending.push(
          env.ctx.db
            .transact((trx) => recordEvent(env.ctx, trx, env.brandId, 'partner.approved', partnerApproved(n)))
            .then((event) => {
              committedAt.set(event.id, Date.now());
            }),
        );
      }
      await sleep(1);
    }
    await Promise.all(pending);
    await waitFor('latency deliveries', async () => (await control<Counts>('count')).recorded >= sent, 25);
  } finally {
    controller.abort();
    await running;
  }
  const arrivals = await control<Array<[string, number]>>('record/stop');
  const first = new Map<string, number>();
  for (const [id, at] of arrivals) if (!first.has(id)) first.set(id, at);
  const latencies: number[] = [];
  for (const [id, at] of committedAt) {
    const arrived = first.get(id);
    if (arrived === undefined) throw new Error(`webhooks latency: event ${id} never reached the receiver`);
    latencies.push(arrived - at);
  }
  return latencies.sort((a, b) => a - b);
}

/** Queues `events` on a fresh database and dispatches them; the fast receiver's deliveries/s. */
async function isolationRun(events: number, withSlowReceiver: boolean, limitMs: number): Promise<DispatchRun> {
  const env = await createEnv(withSlowReceiver);
  try {
    await queueEvents(env, events);
    return await dispatchAll(env, events, limitMs);
  } finally {
    await closeEnv(env);
  }
}

export async function benchWebhooks(): Promise<void> {
  console.log('\n# Webhooks: dispatcher deliveries (signed, logged, SQLite) vs raw undici POSTs');
  receiverPorts.fast = await freePort();
  receiverPorts.slow = await freePort();
  const receiver = await startProcess(
    ['-e', RECEIVER],
    { FAST_PORT: String(receiverPorts.fast), SLOW_PORT: String(receiverPorts.slow) },
    `http://127.0.0.1:${receiverPorts.fast}/count`,
  );
  try {
    // --- Throughput, fast receiver only ---
    const env = await createEnv(false);
    let events: number;
    try {
      const concurrency = env.ctx.config.webhookConcurrency;
      const warmIds = await queueEvents(env, WARMUP_EVENTS);
      const warm = await dispatchAll(env, WARMUP_EVENTS);
      if (!warm.complete) throw new Error(`webhooks: warm-up delivered ${warm.delivered} of ${WARMUP_EVENTS}`);
      await baselinePosts(await storedPayloads(env, warmIds), concurrency);
      // Sized from the warm-up rate so each measured run lasts about RUN_SECONDS.
      const sized = Math.round(((WARMUP_EVENTS / warm.seconds) * RUN_SECONDS) / 1000) * 1000;
      events = Math.min(MAX_EVENTS, Math.max(MIN_EVENTS, sized));

      let started = performance.now();
      const ids = await queueEvents(env, events);
      const queueSeconds = (performance.now() - started) / 1000;
      const run = await dispatchAll(env, events);
      if (!run.complete) throw new Error(`webhooks: delivered ${run.delivered} of ${events} in ${run.seconds} s`);
      await verifyLogged(env, WARMUP_EVENTS + events);
      const rate = events / run.seconds;
      const bodies = await storedPayloads(env, ids);
      started = performance.now();
      const baseline = await baselinePosts(bodies, concurrency);
      console.log(
        `  queued ${events} events in ${queueSeconds.toFixed(1)} s; delivered in ${run.seconds.toFixed(2)} s ` +
          `(concurrency ${concurrency}, per subscription ${env.ctx.config.webhookConcurrencyPerSubscription}); ` +
          `baseline ${((performance.now() - started) / 1000).toFixed(2)} s`,
      );
      const ratio = rate / baseline;
      record({
        benchmark: 'webhooks',
        metric: 'deliveries/s',
        value: rate,
        unit: 'deliveries/s',
        baseline,
        ratio,
        target: `>= ${TARGET_RATE}/s and ratio >= ${TARGET_RATIO}`,
        pass: rate >= TARGET_RATE && ratio >= TARGET_RATIO,
        dialect: 'sqlite',
      });

      // --- Commit-to-first-attempt latency at LATENCY_RATE events/s ---
      const latencies = await measureLatency(env);
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      console.log(
        `  latency: ${latencies.length} events at ${LATENCY_RATE}/s, one per transaction; ` +
          `max ${latencies[latencies.length - 1]} ms`,
      );
      record({
        benchmark: 'webhooks',
        metric: 'commit-to-first-attempt p50',
        value: p50,
        unit: 'ms',
        target: `<= ${TARGET_P50} ms at ${LATENCY_RATE} events/s`,
        pass: p50 <= TARGET_P50,
        dialect: 'sqlite',
      });
      record({
        benchmark: 'webhooks',
        metric: 'commit-to-first-attempt p99',
        value: p99,
        unit: 'ms',
        target: `<= ${TARGET_P99} ms at ${LATENCY_RATE} events/s`,
        pass: p99 <= TARGET_P99,
        dialect: 'sqlite',
      });
    } finally {
      await closeEnv(env);
    }

    // --- Isolation: the same load with and without a second, hanging subscription on the
    // same event, each on a fresh database, back to back so both see the same machine. ---
    const reference = await isolationRun(events, false, WAIT_LIMIT_MS);
    if (!reference.complete) throw new Error(`webhooks: reference run delivered ${reference.delivered} of ${events}`);
    const referenceRate = events / reference.seconds;
    // Bounded so a collapse is measured, not waited out: the rate is what it delivered meanwhile.
    const limitMs = Math.max(ISOLATION_MIN_LIMIT_MS, 3 * reference.seconds * 1000);
    const isolated = await isolationRun(events, true, limitMs);
    const slowRate = isolated.delivered / isolated.seconds;
    const drop = Math.max(0, (1 - slowRate / referenceRate) * 100);
    const counts = await control<Counts>('count');
    console.log(
      `  fast receiver alone: ${events} deliveries in ${reference.seconds.toFixed(2)} s; beside a hanging one: ` +
        `${isolated.delivered} in ${isolated.seconds.toFixed(2)} s${isolated.complete ? '' : ' (stopped at the limit)'}, ` +
        `${counts.slow} attempts reached the hanging receiver`,
    );
    record({
      benchmark: 'webhooks',
      metric: 'fast receiver deliveries/s beside a hanging one',
      value: slowRate,
      unit: 'deliveries/s',
      baseline: referenceRate,
      ratio: slowRate / referenceRate,
      dialect: 'sqlite',
    });
    record({
      benchmark: 'webhooks',
      metric: 'throughput drop beside a hanging receiver',
      value: drop,
      unit: '%',
      target: `<= ${TARGET_DROP} %`,
      pass: drop <= TARGET_DROP,
      dialect: 'sqlite',
    });
  } finally {
    await stopProcess(receiver);
  }
}
