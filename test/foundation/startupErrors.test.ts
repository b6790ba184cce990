/**
 * A server that cannot start says why in one line naming the cause (the variable to change),
 * exits 1, and leaves no stack trace: a port held by a real listener, a SQLite directory the
 * process may not write, PostgreSQL refusing connections. A bad variable is the user's to fix: 2.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI, ROOT } from '../chaos/service.js';
import { freePort } from '../net.js';
import { waitFor } from '../wait.js';
import { assertFailure, childEnv, runCli } from './cliProcess.js';

/** An unprivileged account: root may write anywhere, so the test drops to it when run as root. */
const NOBODY = 65534;

/** True when a user without rights of its own can reach `dir` (every ancestor lets others search it). */
function othersCanReach(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

describe('start-up errors', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-startup-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  describe('a port held by another listener', () => {
    let holder: Server;
    let port: number;
    before(async () => {
      holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      port = (holder.address() as { port: number }).port;
    });
    after(() => new Promise<void>((resolve) => holder.close(() => resolve())));

    for (const json of [false, true]) {
      it(`names PORT in one line and exits 1${json ? ' (--json: port_in_use on stdout)' : ''}`, async () => {
        const args = json ? ['serve', '--json'] : ['serve'];
        const result = await runCli(args, { DATA_DIR: path.join(dataDir, 'busy'), PORT: String(port) });
        const message = assertFailure(result, { exitCode: 1, code: 'port_in_use', json, logsOnStdout: true });
        assert.match(message, new RegExp(`^PORT ${port} is already in use on 127\\.0\\.0\\.1`));
        const logLines = result.stdout.split('\n').filter(Boolean);
        for (const line of logLines) assert.doesNotThrow(() => JSON.parse(line), `not a JSON log line: ${line}`);
      });
    }

    it('names METRICS_PORT, not PORT, when the metrics port is the one held, before any key is shown', async () => {
      const env = { DATA_DIR: path.join(dataDir, 'metrics-busy'), PORT: String(await freePort()) };
      const result = await runCli(['serve', '--json'], { ...env, METRICS_PORT: String(port) });
      // One line on stderr: the first key was not printed (and used up) by a server that then failed.
      const message = assertFailure(result, { exitCode: 1, code: 'port_in_use', json: true, logsOnStdout: true });
      assert.equal(
        message,
        `METRICS_PORT ${port} is already in use on 127.0.0.1: stop the process holding it or set METRICS_PORT to a free port`,
      );
    });

    it('has not used up the first API key: the next start, on a free port, prints it', async () => {
      const env = { DATA_DIR: path.join(dataDir, 'first-key'), PORT: String(port) };
      assertFailure(await runCli(['serve'], env), { exitCode: 1, code: 'port_in_use', json: false });
      const server = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
        cwd: ROOT,
        env: childEnv({ ...env, PORT: '0' }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      server.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      try {
        await waitFor('the first key on stderr', () => /afk_\S+/.test(stderr), 30_000, 100);
      } finally {
        server.kill('SIGTERM');
        await new Promise((resolve) => server.once('exit', resolve));
      }
    });
  });

  it('refuses a second server on the same SQLite DATA_DIR, and takes it once the first is killed', async () => {
    const port = await freePort();
    const env = { DATA_DIR: path.join(dataDir, 'shared'), PORT: String(port) };
    const up = async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true;
    const start = () => {
      const server = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
        cwd: ROOT,
        env: childEnv(env),
        stdio: 'ignore',
      });
      return { server, exited: new Promise((resolve) => server.once('exit', resolve)) };
    };
    const first = start();
    try {
      await waitFor('the first server', up, 30_000, 100);
      const second = await runCli(['serve', '--json'], { ...env, PORT: '0' });
      const message = assertFailure(second, { exitCode: 1, code: 'data_dir_in_use', json: true, logsOnStdout: true });
      assert.match(message, /another affitrack server is running on the SQLite database in .*shared \(DATA_DIR\)/);
      // The CLI's own commands still work beside the server.
      assert.equal((await runCli(['brands', 'create', '--name', 'Beside', '--json'], env)).code, 0);
    } finally {
      first.server.kill('SIGKILL');
      await first.exited;
    }
    // The system dropped the dead server's lock: the next one starts.
    const third = start();
    try {
      await waitFor('a server after the kill', up, 30_000, 100);
    } finally {
      third.server.kill('SIGTERM');
      await third.exited;
    }
  });

  it('names HOST in one line and exits 1 when it is a name that cannot be resolved', async () => {
    // .invalid never resolves (RFC 6761), on any resolver.
    const env = {
      DATA_DIR: path.join(dataDir, 'bad-host'),
      PORT: String(await freePort()),
      HOST: 'no-such-host.invalid',
    };
    const result = await runCli(['serve', '--json'], env);
    const message = assertFailure(result, { exitCode: 1, code: 'host_unavailable', json: true, logsOnStdout: true });
    assert.match(
      message,
      /^HOST no-such-host\.invalid cannot be resolved \((host not found|host name lookup failed)\)/,
    );
  });

  it('names DATA_DIR in one line when the SQLite directory is not writable', async (t) => {
    const locked = path.join(dataDir, 'locked');
    mkdirSync(locked);
    // Root writes anywhere, so as root the CLI runs as nobody — who must be able to reach the checkout.
    const asRoot = process.getuid?.() === 0;
    if (asRoot && !othersCanReach(ROOT)) {
      t.skip(`running as root and ${ROOT} is not reachable by other users, so no unprivileged user can run the CLI`);
      return;
    }
    if (!asRoot) chmodSync(locked, 0o555);
    const result = await runCli(['serve', '--json'], { DATA_DIR: locked }, asRoot ? { uid: NOBODY, gid: NOBODY } : {});
    const message = assertFailure(result, {
      exitCode: 1,
      code: 'database_unavailable',
      json: true,
      logsOnStdout: true,
    });
    assert.match(message, new RegExp(`SQLite database in ${locked} \\(DATA_DIR\\)`));
  });

  it('names DATA_DIR in one line when it is a file, or cannot be created (under /proc), instead of hanging', async () => {
    const file = path.join(dataDir, 'a-file');
    writeFileSync(file, 'x');
    for (const dir of [file, '/proc/affitrack-cannot-be-here']) {
      const result = await runCli(['migrate'], { DATA_DIR: dir });
      const message = assertFailure(result, { exitCode: 1, code: 'database_unavailable', json: false });
      assert.match(message, new RegExp(`SQLite database in ${dir} \\(DATA_DIR\\)`), dir);
    }
  });

  it('names DATA_DIR in one line when it lies under a file', async () => {
    const file = path.join(dataDir, 'plain-file');
    writeFileSync(file, 'not a directory');
    const result = await runCli(['migrate'], { DATA_DIR: path.join(file, 'data') });
    assert.match(assertFailure(result, { exitCode: 1, code: 'database_unavailable', json: false }), /DATA_DIR/);
  });

  it('names DATABASE_URL, without its password, when PostgreSQL refuses connections', async () => {
    const port = await freePort();
    const url = `postgres://affitrack:s3cret-pw@127.0.0.1:${port}/affitrack`;
    const result = await runCli(['serve', '--json'], { DATA_DIR: dataDir, DATABASE_URL: url });
    const message = assertFailure(result, {
      exitCode: 1,
      code: 'database_unavailable',
      json: true,
      logsOnStdout: true,
    });
    assert.equal(message, `cannot use PostgreSQL at 127.0.0.1:${port}/affitrack (DATABASE_URL): connection refused`);
    assert.doesNotMatch(result.stdout + result.stderr, /s3cret-pw/);
  });

  it('names the variable and exits 2 for a bad configuration value', async () => {
    const result = await runCli(['serve'], { DATA_DIR: dataDir, WEBHOOK_TIMEOUT: 'soon' });
    assert.match(assertFailure(result, { exitCode: 2, code: 'invalid_config', json: false }), /WEBHOOK_TIMEOUT/);
  });

  it('names PUBLIC_URL and exits 2 for a base URL with a query string', async () => {
    const result = await runCli(['serve'], { DATA_DIR: dataDir, PUBLIC_URL: 'http://shop.example/aff?x=1' });
    const message = assertFailure(result, { exitCode: 2, code: 'invalid_config', json: false });
    assert.match(message, /^Invalid PUBLIC_URL: must not carry a query string or fragment/);
  });

  it('names TRUST_PROXY and exits 2 for a proxy list that is not addresses or CIDRs', async () => {
    const result = await runCli(['serve'], { DATA_DIR: dataDir, TRUST_PROXY: '10.0.0.0/33,127.0.0.1' });
    assert.match(assertFailure(result, { exitCode: 2, code: 'invalid_config', json: false }), /TRUST_PROXY/);
  });
});
