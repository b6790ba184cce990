/**
 * The first `serve` on an empty database prints the new API key once, for a person: on the
 * terminal when stdout is one, otherwise on stderr — never among the JSON log lines on stdout.
 * What it suggests works as printed: the `users create` command reaches this server's
 * database, and a worker (which serves no HTTP) suggests no request to its own address.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createDatabase } from '../chaos/database.js';
import { CLI, ROOT } from '../chaos/service.js';
import { PG_SKIP_REASON, PG_URL } from '../helpers.js';
import { freePort } from '../net.js';
import { waitFor } from '../wait.js';
import { childEnv } from './cliProcess.js';

const KEY = /afk_[A-Za-z0-9_-]+/g;
const run = promisify(execFile);

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Waits until the server logs that it started (then runs `check`), and stops it. */
async function whileStarted(child: ChildProcess, output: () => string, check: () => Promise<void> = async () => {}) {
  try {
    await waitFor('affitrack started', () => output().includes('affitrack started'), 30_000, 100);
    await check();
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

describe('the first API key on first start', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-first-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  const env = (dir: string, port: number) => ({
    ...process.env,
    DATA_DIR: dir,
    DATABASE_URL: '',
    REDIS_URL: '',
    PORT: String(port),
    LOG_LEVEL: 'info',
  });

  it('goes to stderr, not into the JSON log on stdout, when stdout is not a terminal', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
      cwd: ROOT,
      env: env(path.join(dataDir, 'piped'), port),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    let status = 0;
    const keys = () => [...new Set(stderr.match(KEY) ?? [])];
    await whileStarted(
      child,
      () => stdout,
      async () => {
        assert.equal(keys().length, 1, `one key on stderr: ${stderr}`);
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/brand`, {
          headers: { authorization: `Bearer ${keys()[0]}` },
        });
        status = res.status;
      },
    );
    assert.equal(status, 200, 'the printed key is the real one');
    assert.match(stderr, /shown once/);
    assert.doesNotMatch(stdout, KEY);
    const lines = stdout.trim().split('\n');
    assert.ok(lines.length >= 2, stdout);
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `not a JSON log line: ${line}`);
  });

  it('goes to the terminal when stdout is one', {
    skip: hasScript() ? false : '`script` is not installed',
  }, async () => {
    const port = await freePort();
    const errFile = path.join(dataDir, 'tty-stderr.txt');
    const command = [process.execPath, '--import', 'tsx', CLI, 'serve'].map((p) => `'${p}'`).join(' ');
    // `script` gives the server a pseudo-terminal as stdout; stderr goes to a file.
    const child = spawn('script', ['-qfec', `${command} 2>'${errFile}'`, '/dev/null'], {
      cwd: ROOT,
      env: env(path.join(dataDir, 'tty'), port),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let terminal = '';
    child.stdout.on('data', (chunk) => {
      terminal += chunk;
    });
    await whileStarted(child, () => terminal);
    assert.equal(new Set(terminal.match(KEY) ?? []).size, 1, terminal);
    assert.match(terminal, /shown once/);
    assert.doesNotMatch(readFileSync(errFile, 'utf8'), KEY);
  });

  /** Starts `serve` (args after it) on a fresh database with only `extra` set, and collects its output. */
  function startServe(args: string[], extra: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', ...args], {
      cwd: ROOT,
      env: childEnv({ LOG_LEVEL: 'info', ...extra }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk) => {
      output.stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output.stderr += chunk;
    });
    return { child, output };
  }

  it('suggests a users create command that, run as printed from another directory, reaches this DATA_DIR', async () => {
    // A space and a quote in the path: the command must quote it for the shell.
    const ownDir = path.join(dataDir, "the team's data");
    const port = await freePort();
    const { child, output } = startServe([], { DATA_DIR: ownDir, PORT: String(port) });
    let suggested = '';
    await whileStarted(
      child,
      () => output.stdout,
      async () => {
        suggested = /^ {4}(.*npx affitrack users create .*)$/m.exec(output.stderr)?.[1] ?? '';
      },
    );
    assert.ok(suggested, output.stderr);
    // `npx affitrack` stands for the CLI from source; the shell runs the rest exactly as printed,
    // in a directory whose ./data is not the server's.
    const elsewhere = path.join(dataDir, 'elsewhere');
    const bin = path.join(elsewhere, 'bin');
    mkdirSync(bin, { recursive: true });
    // tsx reads its settings (JSX among them) from the working directory's tsconfig unless told.
    const tsx = import.meta.resolve('tsx');
    writeFileSync(
      path.join(bin, 'npx'),
      `#!/bin/sh\n[ "$1" = affitrack ] || exit 127\nshift\nTSX_TSCONFIG_PATH='${ROOT}/tsconfig.json' exec '${process.execPath}' --import '${tsx}' '${CLI}' "$@"\n`,
      { mode: 0o755 },
    );
    const env = childEnv({ LOG_LEVEL: 'warn' });
    const { stdout } = await run('sh', ['-c', suggested], {
      cwd: elsewhere,
      env: { ...env, PATH: `${bin}:${env.PATH}` },
    });
    assert.match(
      stdout,
      new RegExp(`Dashboard user you@example\\.com created\\. Sign in at http://127\\.0\\.0\\.1:${port}/dashboard `),
    );
  });

  // Roles are for PostgreSQL scale-out: on SQLite `serve --role worker` is refused.
  it('suggests no request to a worker, which serves no HTTP', { skip: PG_URL ? false : PG_SKIP_REASON }, async () => {
    const port = await freePort();
    const database = await createDatabase('postgres');
    const { child, output } = startServe(['--role', 'worker'], { ...database.env, PORT: String(port) });
    let reachable = true;
    try {
      await whileStarted(
        child,
        () => output.stdout,
        async () => {
          reachable = await fetch(`http://127.0.0.1:${port}/health`).then(
            () => true,
            () => false,
          );
        },
      );
    } finally {
      await database.drop();
    }
    assert.equal(reachable, false, 'nothing listens on the port a worker was given');
    assert.equal(new Set(output.stderr.match(KEY) ?? []).size, 1, output.stderr);
    assert.doesNotMatch(output.stderr, /curl|127\.0\.0\.1/, output.stderr);
    assert.match(output.stderr, /This worker serves no HTTP/);
  });
});
