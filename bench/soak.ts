/**
 * Issue benchmark: soak. The real server (`node dist/cli.js serve`, role all: API and the
 * webhook worker, SQLite, LOG_LEVEL=info) under a bounded mixed load at a fixed modest rate
 * for SOAK_SECONDS (default 180): 60 % tracking clicks, 30 % conversions (each fires
 * conversion.created, delivered to a signed subscription on every event whose receiver, a
 * child process, answers 200 at once), 10 % reports. The generator is open-loop (requests
 * start on a fixed schedule, not when the previous one ends) with a bound on requests in
 * flight; each request's latency is recorded. The server's RSS is read every 5 s.
 * Reported: p99 per kind and overall, and RSS, for the first and the last minute (the first
 * and last third when the run is shorter than 3 minutes), and the ratio last/first.
 * Targets: last-window p99 <= 1.5x the first; RSS growth <= 20 %; no failed request (any 5xx
 * or network error throws); every delivery succeeded by the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import { Agent, request } from 'undici';
import { createBenchBrand, freePort, percentile, ROOT, record, rssMb, startProcess, stopProcess } from './lib.js';

const DEFAULT_SECONDS = 180;
const RATE = 200; // requests per second, all kinds together
const MAX_IN_FLIGHT = 256;
const CONNECTIONS = 32;
const TICK_MS = 5;
const RSS_EVERY_MS = 5000;
const TARGET_P99_RATIO = 1.5;
const TARGET_RSS_GROWTH = 0.2;
const DRAIN_LIMIT_MS = 30_000;
const DIALECT = 'sqlite';
const USER_AGENT =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

type Kind = 'click' | 'conversion' | 'report';
const KINDS: Kind[] = ['click', 'conversion', 'report'];
/** 6 clicks, 3 conversions, 1 report in every 10 requests, interleaved. */
const PATTERN: Kind[] = [
  'click',
  'conversion',
  'click',
  'click',
  'report',
  'click',
  'conversion',
  'click',
  'click',
  'conversion',
];

/** The receiver, in its own process: 200 at once to every POST /hook, counts them. */
const RECEIVER = `
const http = require('node:http');
let hooks = 0, signed = 0;
const server = http.createServer((req, res) => {
  if (req.url === '/hook') {
    hooks++;
    if (req.headers['x-service-signature']) signed++;
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
    return;
  }
  const body = JSON.stringify({ hooks, signed });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 30000;
server.listen(Number(process.env.RECEIVER_PORT), '127.0.0.1');
`;

interface Sample {
  /** Milliseconds since the load started, when the request was sent. */
  at: number;
  ms: number;
}

const p99 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    99,
  );

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function deliveryCounts(file: string): Record<string, number> {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('select status, count(*) as n from webhook_deliveries group by status').all() as Array<{
      status: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    db.close();
  }
}

export async function benchSoak(): Promise<void> {
  const seconds = Number(process.env.SOAK_SECONDS ?? DEFAULT_SECONDS);
  if (!Number.isFinite(seconds) || seconds < 3) throw new Error(`soak: SOAK_SECONDS must be >= 3, got ${seconds}`);
  const durationMs = seconds * 1000;
  const windowMs = seconds >= 180 ? 60_000 : durationMs / 3;
  const windowLabel = seconds >= 180 ? 'minute' : `third (${(windowMs / 1000).toFixed(0)} s)`;
  console.log(`\n# Soak: ${RATE} req/s mixed (60% clicks, 30% conversions, 10% reports) for ${seconds} s, webhooks on`);

  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-soak-'));
  const dbFile = path.join(dataDir, 'affitrack.db');
  const port = await freePort();
  const receiverPort = await freePort();
  const env = {
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    PORT: String(port),
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  const base = `http://127.0.0.1:${port}`;
  const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: 30_000 });
  let receiver: Awaited<ReturnType<typeof startProcess>> | null = null;
  let server: Awaited<ReturnType<typeof startProcess>> | null = null;
  try {
    const key = await createBenchBrand('Soak', env);
    const headers = { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' };
    receiver = await startProcess(
      ['-e', RECEIVER],
      { RECEIVER_PORT: String(receiverPort) },
      `http://127.0.0.1:${receiverPort}/count`,
    );
    server = await startProcess([path.join(ROOT, 'dist/cli.js'), 'serve'], env, `${base}/health`);
    const pid = server.pid;
    if (pid === undefined) throw new Error('soak: server has no pid');

    const post = async (url: string, body: unknown) => {
      const res = await fetch(`${base}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    const events = (
      (await (await fetch(`${base}/api/public/webhook-events`, { headers })).json()) as {
        data: Array<{ name: string }>;
      }
    ).data.map((e) => e.name);
    await post('/api/public/webhooks', {
      url: `http://127.0.0.1:${receiverPort}/hook`,
      events,
      secret: 'whsec_soak_benchmark_secret',
    });
    const offer = await post('/api/v1/offers', {
      name: 'Soak offer',
      destinationUrl: 'https://shop.example/land?click={click_id}&s1={sub1}',
    });
    const partner = await post('/api/v1/partners', { name: 'Soak partner', email: 'soak@example.com' });

    const samples: Record<Kind, Sample[]> = { click: [], conversion: [], report: [] };
    const statuses: Record<Kind, Record<string, number>> = { click: {}, conversion: {}, report: {} };
    const networkErrors: string[] = [];
    const rss: Array<{ at: number; mb: number }> = [];
    let sent = 0;
    let skipped = 0;
    let inFlight = 0;
    const pending = new Set<Promise<void>>();

    const fire = (kind: Kind, n: number, start: number) => {
      let path: string;
      let options: Parameters<typeof request>[1];
      if (kind === 'click') {
        path = `/t/${offer.id}/${partner.id}?sub1=s${n % 100}`;
        options = { method: 'GET', headers: { 'user-agent': USER_AGENT, accept: 'text/html' } };
      } else if (kind === 'conversion') {
        path = '/api/v1/conversions';
        options = {
          method: 'POST',
          headers,
          body: JSON.stringify({
            offerId: offer.id,
            partnerId: partner.id,
            revenueCents: 1000,
            payoutCents: 400,
            externalTxnId: `soak-${n}`,
          }),
        };
      } else {
        path = '/api/v1/reports?groupBy=day,offer';
        options = { method: 'GET', headers };
      }
      const sentAt = performance.now();
      inFlight += 1;
      const task = request(`${base}${path}`, { ...options, dispatcher: agent })
        .then(async (res) => {
          await res.body.dump({ limit: Number.POSITIVE_INFINITY });
          const ms = performance.now() - sentAt;
          samples[kind].push({ at: sentAt - start, ms });
          const code = String(res.statusCode);
          statuses[kind][code] = (statuses[kind][code] ?? 0) + 1;
        })
        .catch((error: Error) => {
          networkErrors.push(`${kind}: ${error.message}`);
        })
        .finally(() => {
          inFlight -= 1;
          pending.delete(task);
        });
      pending.add(task);
    };

    const start = performance.now();
    rss.push({ at: 0, mb: rssMb(pid) });
    const rssTimer = setInterval(() => rss.push({ at: performance.now() - start, mb: rssMb(pid) }), RSS_EVERY_MS);
    let lastReport = 0;
    try {
      while (performance.now() - start < durationMs) {
        const now = performance.now() - start;
        const due = Math.min(Math.floor((now * RATE) / 1000), Math.floor((durationMs * RATE) / 1000));
        while (sent + skipped < due) {
          const n = sent + skipped;
          if (inFlight >= MAX_IN_FLIGHT) skipped += 1;
          else {
            fire(PATTERN[n % PATTERN.length] as Kind, n, start);
            sent += 1;
          }
        }
        if (now - lastReport >= 10_000) {
          lastReport = now;
          const latest = rss[rss.length - 1]?.mb ?? 0;
          console.log(
            `  soak ${(now / 1000).toFixed(0)} s: ${sent} sent, ${inFlight} in flight, ${skipped} skipped, RSS ${latest.toFixed(1)} MB`,
          );
        }
        await sleep(TICK_MS);
      }
      await Promise.allSettled([...pending]);
    } finally {
      clearInterval(rssTimer);
    }
    rss.push({ at: durationMs, mb: rssMb(pid) });
    const elapsedMs = performance.now() - start;

    // The webhook worker catches up: every delivery ends succeeded (or the wait gives up).
    const drainStarted = Date.now();
    let counts = deliveryCounts(dbFile);
    while (Object.keys(counts).some((s) => s !== 'succeeded') && Date.now() - drainStarted < DRAIN_LIMIT_MS) {
      await sleep(250);
      counts = deliveryCounts(dbFile);
    }
    const received = (await (await fetch(`http://127.0.0.1:${receiverPort}/count`)).json()) as {
      hooks: number;
      signed: number;
    };

    // Failures: non-2xx/3xx answers and network errors.
    const failed: Record<string, number> = {};
    let serverErrors = 0;
    for (const kind of KINDS) {
      for (const [code, n] of Object.entries(statuses[kind])) {
        const c = Number(code);
        if (c >= 200 && c < 400) continue;
        failed[`${kind} ${code}`] = n;
        if (c >= 500) serverErrors += n;
      }
    }
    const failures = Object.values(failed).reduce((a, b) => a + b, 0) + networkErrors.length;

    const inWindow = (at: number, from: number, to: number) => at >= from && at < to;
    const firstWindow: [number, number] = [0, windowMs];
    const lastWindow: [number, number] = [durationMs - windowMs, durationMs + 1];
    const windowP99 = (kind: Kind | 'overall', [from, to]: [number, number]) => {
      const list = kind === 'overall' ? KINDS.flatMap((k) => samples[k]) : samples[kind];
      return p99(list.filter((s) => inWindow(s.at, from, to)).map((s) => s.ms));
    };
    const windowRss = ([from, to]: [number, number]) =>
      mean(rss.filter((r) => inWindow(r.at, from, to)).map((r) => r.mb));

    for (const kind of [...KINDS, 'overall'] as const) {
      const first = windowP99(kind, firstWindow);
      const last = windowP99(kind, lastWindow);
      const ratio = last / first;
      record({
        benchmark: 'soak',
        metric: `p99 latency, ${kind === 'overall' ? 'all requests' : `${kind}s`}: last ${windowLabel} (baseline: first)`,
        value: last,
        unit: 'ms',
        baseline: first,
        ratio,
        ...(kind === 'overall'
          ? { target: `last <= ${TARGET_P99_RATIO}x first`, pass: ratio <= TARGET_P99_RATIO }
          : {}),
        dialect: DIALECT,
      });
    }
    const rssFirst = windowRss(firstWindow);
    const rssLast = windowRss(lastWindow);
    record({
      benchmark: 'soak',
      metric: `server RSS (mean of 5 s samples): last ${windowLabel} (baseline: first)`,
      value: rssLast,
      unit: 'MB',
      baseline: rssFirst,
      ratio: rssLast / rssFirst,
      target: `growth <= ${TARGET_RSS_GROWTH * 100}%`,
      pass: rssLast / rssFirst <= 1 + TARGET_RSS_GROWTH,
      dialect: DIALECT,
    });
    record({
      benchmark: 'soak',
      metric: `server RSS at start / peak sample (${rss.length} samples)`,
      value: Math.max(...rss.map((r) => r.mb)),
      unit: 'MB',
      baseline: rss[0]?.mb,
      ratio: Math.max(...rss.map((r) => r.mb)) / (rss[0]?.mb ?? 1),
      dialect: DIALECT,
    });
    record({
      benchmark: 'soak',
      metric: `requests sent (${KINDS.map((k) => `${samples[k].length} ${k}s`).join(', ')}; ${skipped} skipped at ${MAX_IN_FLIGHT} in flight)`,
      value: sent / (elapsedMs / 1000),
      unit: 'req/s',
      target: `${RATE} req/s, none skipped`,
      pass: skipped === 0 && sent / (elapsedMs / 1000) >= RATE * 0.95,
      dialect: DIALECT,
    });
    record({
      benchmark: 'soak',
      metric: `failed requests (non-2xx/3xx ${JSON.stringify(failed)}, ${networkErrors.length} network errors)`,
      value: failures,
      unit: 'requests',
      target: '0',
      pass: failures === 0,
      dialect: DIALECT,
    });
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const succeeded = counts.succeeded ?? 0;
    record({
      benchmark: 'soak',
      metric: `webhook deliveries succeeded (of ${total}; ${received.hooks} received, ${received.signed} signed)`,
      value: succeeded,
      unit: 'deliveries',
      target: `all, >= ${samples.conversion.length} conversions`,
      pass: succeeded === total && succeeded >= (statuses.conversion['201'] ?? 0),
      dialect: DIALECT,
    });
    if (serverErrors > 0 || networkErrors.length > 0) {
      throw new Error(
        `soak: ${serverErrors} 5xx answers, ${networkErrors.length} network errors ` +
          `(${JSON.stringify(failed)}; ${networkErrors.slice(0, 3).join('; ')})`,
      );
    }
  } finally {
    await agent.close();
    if (server) await stopProcess(server);
    if (receiver) await stopProcess(receiver);
    rmSync(dataDir, { recursive: true, force: true });
  }
}
