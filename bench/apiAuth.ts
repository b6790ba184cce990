/**
 * Issue #2 benchmark: an authenticated `GET /api/v1/brand` (auth, rate limit, logging,
 * SQLite) against a bare node:http server answering the same JSON, same load, same run.
 * Target: ratio >= 0.7.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createBenchBrand, freePort, load, ROOT, record, startProcess, stopProcess } from './lib.js';

export async function benchApiAuth(): Promise<void> {
  console.log('\n# API: authenticated GET /api/v1/brand vs bare node:http');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-'));
  const AFFITRACK_PORT = await freePort();
  const BARE_PORT = await freePort();
  const env = { DATA_DIR: dataDir, DATABASE_URL: '', PORT: String(AFFITRACK_PORT), LOG_LEVEL: 'info' };
  try {
    const key = await createBenchBrand('Bench', env);
    const server = await startProcess(
      [path.join(ROOT, 'bench/apiOnlyServer.mjs')],
      env,
      `http://127.0.0.1:${AFFITRACK_PORT}/health`,
    );
    const headers = { authorization: `Bearer ${key.apiKey}` };
    const sample = await fetch(`http://127.0.0.1:${AFFITRACK_PORT}/api/v1/brand`, { headers });
    const body = await sample.text();
    const bare = await startProcess(
      [path.join(ROOT, 'bench/bareServer.mjs')],
      { BARE_PORT: String(BARE_PORT), BARE_BODY: body },
      `http://127.0.0.1:${BARE_PORT}/health`,
    );
    try {
      await load({ url: `http://127.0.0.1:${AFFITRACK_PORT}/api/v1/brand`, headers, duration: 2 }); // warm-up
      await load({ url: `http://127.0.0.1:${BARE_PORT}/api/v1/brand`, duration: 2 });
      const ours = await load({ url: `http://127.0.0.1:${AFFITRACK_PORT}/api/v1/brand`, headers });
      const base = await load({ url: `http://127.0.0.1:${BARE_PORT}/api/v1/brand` });
      if (ours.non2xx > 0) throw new Error(`${ours.non2xx} non-2xx answers during the benchmark`);
      const ratio = ours.rps / base.rps;
      record({
        benchmark: 'api-auth',
        metric: 'req/s',
        value: ours.rps,
        unit: 'req/s',
        baseline: base.rps,
        ratio,
        target: 'ratio >= 0.7',
        pass: ratio >= 0.7,
        dialect: 'sqlite',
      });
      record({
        benchmark: 'api-auth',
        metric: 'p99 latency',
        value: ours.p99,
        unit: 'ms',
        baseline: base.p99,
        dialect: 'sqlite',
      });
    } finally {
      await stopProcess(bare);
      await stopProcess(server);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
