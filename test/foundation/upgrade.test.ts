/**
 * Upgrading: a newer version's CLI beside an older running server, and an older version on a
 * database a newer one migrated.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { holdServeLock } from '../../src/db/serveLock.js';
import { assertFailure, runCli } from './cliProcess.js';

describe('upgrading', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-upgrade-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a command finding the SQLite database behind while a server runs on it refuses to migrate, in one line', async () => {
    const env = { DATA_DIR: path.join(dataDir, 'behind') };
    // The older server: it holds the serve lock on a database this version has migrations for.
    mkdirSync(env.DATA_DIR);
    const stopServer = holdServeLock(env.DATA_DIR);
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(['keys', 'list', '--brand', 'brd_x', '--json'], env);
    } finally {
      stopServer();
    }
    const message = assertFailure(result, { exitCode: 1, code: 'server_running', json: true });
    assert.match(message, /needs migrations of this version \(0001_\S+, .*\) and a server is running on it/);
    assert.match(message, /stop that server .* or start this version's server \(affitrack serve\), which migrates$/);
    const file = new SQLite(path.join(env.DATA_DIR, 'affitrack.db'), { readonly: true });
    try {
      const booked = file.prepare("select count(*) as n from sqlite_master where name = 'kysely_migration'").get();
      assert.deepEqual(booked, { n: 0 }, 'nothing was migrated under the server');
    } finally {
      file.close();
    }
    // With the server stopped the same command migrates and runs.
    const afterStop = await runCli(['brands', 'create', '--name', 'Upgraded', '--json'], env);
    assert.equal(afterStop.code, 0, afterStop.stderr);
  });
});
