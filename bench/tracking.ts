/**
 * Issue benchmark: the tracking link. `GET /t/:offerId/:partnerId?sub1=abc` from 50
 * concurrent clients against the real server on SQLite (LOG_LEVEL=info, the production
 * default), and in the same run the same load against a bare node:http server answering
 * the same 302 (bench/bareServer.mjs).
 * Targets: >= 0.5 of the bare server's rate, p99 <= 10 ms, and every answered redirect is a
 * stored click (counted in the database afterwards). Then clicks keep coming until
 * 1,000,000 have been recorded, and the server's RSS is reported.
 *
 * All clicks come from 127.0.0.1, so after 5 clicks within 60 s the click_velocity signal
 * fires on every click (score 30, below the default high-risk threshold of 75): that is part
 * of the real per-click work and is left on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';
import { createBenchBrand, freePort, ROOT, record, rssMb, startProcess, stopProcess } from './lib.js';

const CONNECTIONS = 50;
const WARMUP_SECONDS = 2;
const MEASURE_SECONDS = 10;
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 10;
const LOG_LEVEL = 'info';
/** Clicks (counted from the first warm-up request) after which the server's RSS is read. */
const MEMORY_CLICKS = 1_000_000;
/** Below this measured rate 1,000,000 clicks take too long: stop at what MEMORY_BUDGET_SLOW_S reaches. */
const MEMORY_MIN_RATE = 3000;
const MEMORY_BUDGET_SLOW_S = 240;
/** Safety cap when the measured rate was fast enough but the rate then drops. */
const MEMORY_BUDGET_S = 480;
/** Clicks are sent in chunks of about this many seconds, so progress can be reported. */
const CHUNK_SECONDS = 20;
const USER_AGENT =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const DESTINATION = 'https://shop.example/land?click={click_id}&s1={sub1}';
const BARE_LOCATION = 'https://shop.example/land?click=x&s1=abc';
const DIALECT = 'sqlite';

interface Shot {
  redirects: number;
  /** Answers other than 302, by status code. */
  other: Record<string, number>;
  errors: number;
  timeouts: number;
  rps: number;
  p50: number;
  p99: number;
  seconds: number;
}

/** One autocannon run of GET `url`, for `duration` seconds or exactly `amount` requests. */
async function fire(url: string, limit: { duration: number } | { amount: number }): Promise<Shot> {
  const started = performance.now();
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    headers: { 'user-agent': USER_AGENT, accept: 'text/html' },
    ...limit,
  });
  const seconds = (performance.now() - started) / 1000;
  const codes = (result.statusCodeStats ?? {}) as Record<string, { count?: number }>;
  const other: Record<string, number> = {};
  for (const [code, stats] of Object.entries(codes)) {
    if (code !== '302' && (stats.count ?? 0) > 0) other[code] = stats.count ?? 0;
  }
  return {
    redirects: codes['302']?.count ?? 0,
    other,
    errors: result.errors,
    timeouts: result.timeouts,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    seconds,
  };
}

function assertClean(label: string, shot: Shot): void {
  if (Object.keys(shot.other).length > 0 || shot.errors > 0 || shot.timeouts > 0) {
    throw new Error(
      `tracking (${label}): answers other than 302 ${JSON.stringify(shot.other)}, ` +
        `${shot.errors} errors, ${shot.timeouts} timeouts`,
    );
  }
  if (shot.redirects === 0) throw new Error(`tracking (${label}): no 302 answers at all`);
}

/** Counts the stored clicks and the clicks in the report facts (each click adds 1 there, same transaction). */
function countStored(file: string): { clicks: number; rollupClicks: number } {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const clicks = (db.prepare('select count(*) as n from clicks').get() as { n: number }).n;
    const rollupClicks = (
      db.prepare('select coalesce(sum(clicks), 0) as n from analytics_facts').get() as { n: number }
    ).n;
    return { clicks, rollupClicks };
  } finally {
    db.close();
  }
}

const thousands = (n: number) => n.toLocaleString('en-US');

export async function benchTracking(): Promise<void> {
  console.log(`\n# Tracking link: GET /t/:offer/:partner (${CONNECTIONS} clients) vs bare node:http 302`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-tracking-'));
  const dbFile = path.join(dataDir, 'affitrack.db');
  const PORT = await freePort();
  const BARE_PORT = await freePort();
  const env = { DATA_DIR: dataDir, DATABASE_URL: '', PORT: String(PORT), LOG_LEVEL };
  const base = `http://127.0.0.1:${PORT}`;
  const bareBase = `http://127.0.0.1:${BARE_PORT}`;
  const label = `LOG_LEVEL=${LOG_LEVEL}`;
  try {
    const key = await createBenchBrand('Bench', env);
    const headers = { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' };
    const server = await startProcess([path.join(ROOT, 'bench/apiOnlyServer.mjs')], env, `${base}/health`);
    const pid = server.pid;
    if (pid === undefined) throw new Error('tracking: server has no pid');
    let answered = 0; // every 302 received from the server, from the first request on
    let main: Shot;
    let bare: Shot;
    let rssStart: number;
    let memory: { from: number; clicks: number; rss: number; peak: number; budget: number; seconds: number };
    let capped = false;
    try {
      const post = async (url: string, body: unknown) => {
        const res = await fetch(`${base}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
        if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
        return (await res.json()) as { id: string };
      };
      const offer = await post('/api/v1/offers', { name: 'Bench offer', destinationUrl: DESTINATION });
      const partner = await post('/api/v1/partners', { name: 'Bench partner', email: 'partner@example.com' });
      const trackUrl = `${base}/t/${offer.id}/${partner.id}?sub1=abc`;
      rssStart = rssMb(pid);

      // One click by hand: the redirect must carry the filled-in destination.
      const sample = await fetch(trackUrl, { redirect: 'manual', headers: { 'user-agent': USER_AGENT } });
      const location = sample.headers.get('location') ?? '';
      await sample.arrayBuffer();
      if (sample.status !== 302 || !/^https:\/\/shop\.example\/land\?click=clk_[^&]+&s1=abc$/.test(location)) {
        throw new Error(`tracking: sample click answered ${sample.status} with location ${JSON.stringify(location)}`);
      }
      answered += 1;

      const bareServer = await startProcess(
        [path.join(ROOT, 'bench/bareServer.mjs')],
        { BARE_PORT: String(BARE_PORT), BARE_LOCATION },
        `${bareBase}/health`,
      );
      try {
        const warm = await fire(trackUrl, { duration: WARMUP_SECONDS });
        answered += warm.redirects;
        assertClean('warm-up', warm);
        assertClean('bare warm-up', await fire(`${bareBase}/t/off/prt?sub1=abc`, { duration: WARMUP_SECONDS }));

        main = await fire(trackUrl, { duration: MEASURE_SECONDS });
        answered += main.redirects;
        assertClean('measured', main);
        bare = await fire(`${bareBase}/t/off/prt?sub1=abc`, { duration: MEASURE_SECONDS });
        assertClean('bare', bare);
      } finally {
        await stopProcess(bareServer);
      }
      // While the server still runs: every redirect answered so far is a committed click.
      const live = countStored(dbFile);
      console.log(`  live check: ${thousands(answered)} redirects answered, ${thousands(live.clicks)} clicks stored`);
      if (live.clicks < answered) {
        throw new Error(`tracking: ${answered} redirects answered but only ${live.clicks} clicks committed`);
      }

      // Memory: keep clicking until MEMORY_CLICKS have been recorded (or the time budget ends).
      const budget = main.rps >= MEMORY_MIN_RATE ? MEMORY_BUDGET_S : MEMORY_BUDGET_SLOW_S;
      const memoryStarted = performance.now();
      const from = answered;
      let rate = main.redirects / main.seconds;
      while (answered < MEMORY_CLICKS) {
        const left = budget - (performance.now() - memoryStarted) / 1000;
        if (left < 1) {
          capped = true;
          break;
        }
        const amount = Math.max(
          CONNECTIONS,
          Math.min(MEMORY_CLICKS - answered, Math.round(rate * Math.min(CHUNK_SECONDS, left))),
        );
        const chunk = await fire(trackUrl, { amount });
        answered += chunk.redirects;
        assertClean('memory run', chunk);
        rate = chunk.redirects / chunk.seconds;
        console.log(
          `  memory run: ${thousands(answered)} / ${thousands(MEMORY_CLICKS)} clicks, ` +
            `${Math.round(rate)}/s, p99 ${chunk.p99} ms, RSS ${rssMb(pid).toFixed(1)} MB`,
        );
      }
      memory = {
        from,
        clicks: answered,
        rss: rssMb(pid),
        peak: rssMb(pid, 'VmHWM'),
        budget,
        seconds: (performance.now() - memoryStarted) / 1000,
      };
    } finally {
      await stopProcess(server);
    }
    if (server.exitCode === null && server.signalCode === null) throw new Error('tracking: server did not exit');

    // After a clean stop (SIGTERM): every answered redirect is a stored click.
    const stored = countStored(dbFile);
    console.log(
      `  verify: ${thousands(answered)} redirects answered, ${thousands(stored.clicks)} clicks stored, ` +
        `rollups count ${thousands(stored.rollupClicks)}`,
    );
    if (stored.clicks < answered) {
      throw new Error(`tracking: ${answered} redirects answered but the database holds ${stored.clicks} clicks`);
    }
    if (stored.rollupClicks !== stored.clicks) {
      throw new Error(`tracking: ${stored.clicks} clicks stored but the rollups count ${stored.rollupClicks}`);
    }

    const ratio = main.rps / bare.rps;
    record({
      benchmark: 'tracking',
      metric: `clicks/s (${label})`,
      value: main.rps,
      unit: 'req/s',
      baseline: bare.rps,
      ratio,
      target: `ratio >= ${TARGET_RATIO}`,
      pass: ratio >= TARGET_RATIO,
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: `p50 latency (${label})`,
      value: main.p50,
      unit: 'ms',
      baseline: bare.p50,
      ratio: main.p50 / Math.max(bare.p50, 1),
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: `p99 latency (${label})`,
      value: main.p99,
      unit: 'ms',
      baseline: bare.p99,
      ratio: main.p99 / Math.max(bare.p99, 1),
      target: `<= ${TARGET_P99_MS} ms`,
      pass: main.p99 <= TARGET_P99_MS,
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: '302 answers received (whole run)',
      value: answered,
      unit: 'redirects',
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: 'clicks stored after SIGTERM',
      value: stored.clicks,
      unit: 'rows',
      target: '>= 302 answers',
      pass: stored.clicks >= answered,
      dialect: DIALECT,
    });
    record({ benchmark: 'tracking', metric: 'server RSS at start', value: rssStart, unit: 'MB', dialect: DIALECT });
    const reached = capped
      ? `${thousands(memory.clicks)} clicks (time-capped at ${memory.budget} s; ${thousands(MEMORY_CLICKS)} not reached)`
      : `${thousands(memory.clicks)} clicks`;
    record({
      benchmark: 'tracking',
      metric: `server RSS after ${reached}`,
      value: memory.rss,
      unit: 'MB',
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: `server peak RSS (VmHWM) after ${reached}`,
      value: memory.peak,
      unit: 'MB',
      dialect: DIALECT,
    });
    record({
      benchmark: 'tracking',
      metric: `mean click rate over the memory run (${Math.round(memory.seconds)} s)`,
      value: (memory.clicks - memory.from) / memory.seconds,
      unit: 'clicks/s',
      dialect: DIALECT,
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
