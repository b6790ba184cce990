/**
 * `npm start` as a person runs it: a real npm process running the built server. A signal sent
 * to npm's process (what `kill <pid>` and process managers do) stops the server: npm exits, the
 * node process is gone and the port is free. The URLs it prints carry the port really bound
 * (PORT=0 lets the system pick) or PUBLIC_URL, and the `users create` command it suggests
 * prints the same dashboard URL.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from '../chaos/service.js';
import { waitFor } from '../wait.js';
import { childEnv, runCli } from './cliProcess.js';

const run = promisify(execFile);
const KEY = /afk_[A-Za-z0-9_-]+/;

/** Process groups of the npm processes started here; whatever is left of them is killed at the end. */
const groups = new Set<number>();

interface Started {
  npm: ChildProcess;
  /** The node process serving, as its own log lines name it. */
  serverPid: number;
  /** The port it listens on, from Fastify's "Server listening at" line. */
  port: number;
  /** The URL of the `affitrack started` log line. */
  url: string;
  stderr: () => string;
}

async function npmStart(env: Record<string, string>): Promise<Started> {
  // A process group of its own, so a failed test can take down npm and the server together.
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: childEnv({ LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  groups.add(npm.pid as number);
  let stdout = '';
  let stderr = '';
  npm.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  npm.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  // npm prints its own "> affitrack start" lines first; the server's log lines are JSON.
  const logLines = () =>
    stdout
      .split('\n')
      .filter((line) => line.startsWith('{') && line.endsWith('}'))
      .map((line) => JSON.parse(line));
  const started = await waitFor(
    'the "affitrack started" log line',
    () => logLines().find((entry) => entry.msg === 'affitrack started'),
    30_000,
    100,
  );
  // Every start here is the first on its DATA_DIR: the banner comes on stderr, a pipe of its own.
  await waitFor('the first-start banner', () => stderr.includes('then open '), 5000, 50);
  const listening = logLines().find((entry) => String(entry.msg).startsWith('Server listening at'));
  const port = Number(/:(\d+)$/.exec(listening?.msg ?? '')?.[1]);
  return { npm, serverPid: started.pid, port, url: started.url, stderr: () => stderr };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function portIsFree(port: number): Promise<boolean> {
  const probe = createServer();
  const free = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => probe.close(() => resolve()));
  return free;
}

/** Sends `signal` to npm's process only, then checks that nothing of the server is left. */
async function stopThroughNpm(started: Started, signal: NodeJS.Signals): Promise<void> {
  const exited = new Promise<number | null>((resolve) => started.npm.once('exit', (code) => resolve(code)));
  started.npm.kill(signal);
  assert.equal(await exited, 0, `npm exits cleanly\n${started.stderr()}`);
  await waitFor('the server process to be gone', () => !isRunning(started.serverPid), 5000, 50);
  assert.equal(await portIsFree(started.port), true, `port ${started.port} is free again`);
}

describe('npm start', () => {
  let dataDir: string;
  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-npm-start-'));
    // `npm start` runs dist/: build it, so the server under test is this source tree.
    await run('npm', ['run', '-s', 'build'], { cwd: ROOT, env: childEnv({}) });
  });
  after(() => {
    for (const group of groups) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // Already gone, as it should be.
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops on SIGTERM to npm, and with PORT=0 prints URLs on the port it really bound', async () => {
    const env = { DATA_DIR: path.join(dataDir, 'port-zero'), PORT: '0' };
    const started = await npmStart(env);
    assert.ok(started.port > 0, `a real port: ${started.port}`);
    assert.equal(started.url, `http://127.0.0.1:${started.port}`);

    const banner = started.stderr();
    const key = banner.match(KEY)?.[0] ?? '';
    assert.ok(banner.includes(`Bearer ${key}" ${started.url}/api/v1/brand`), banner);
    assert.ok(banner.includes(`then open ${started.url}/dashboard`), banner);
    const brand = await fetch(`${started.url}/api/v1/brand`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(brand.status, 200, 'the printed URL and key reach this server');

    // The suggested command, run as printed, signs the user in at this server.
    const suggested = /(PUBLIC_URL=(\S+) )?npx affitrack users create --brand (\S+) --email (\S+)/.exec(banner);
    assert.ok(suggested, banner);
    const [, , publicUrl, brandId, email] = suggested as unknown as string[];
    assert.equal(publicUrl, started.url);
    const created = await runCli(['users', 'create', '--brand', brandId ?? '', '--email', email ?? ''], {
      DATA_DIR: env.DATA_DIR,
      PUBLIC_URL: publicUrl ?? '',
    });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`Sign in at ${started.url}/dashboard `));

    await stopThroughNpm(started, 'SIGTERM');
  });

  it('stops on SIGINT to npm, and prints PUBLIC_URL when it is set', async () => {
    const publicUrl = 'https://track.example.test';
    const started = await npmStart({ DATA_DIR: path.join(dataDir, 'public-url'), PORT: '0', PUBLIC_URL: publicUrl });
    assert.equal(started.url, publicUrl);
    assert.ok(started.stderr().includes(`then open ${publicUrl}/dashboard`), started.stderr());
    assert.ok(started.stderr().includes(`PUBLIC_URL=${publicUrl} npx affitrack users create`), started.stderr());
    await stopThroughNpm(started, 'SIGINT');
  });
});
