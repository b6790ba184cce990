/**
 * `affitrack backup FILE`: a consistent copy of the SQLite database taken while the server
 * runs, holding the commits that are still only in the WAL.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createBrandWithFirstKey } from '../../src/modules/brands/service.js';
import { closeContext, createContext } from '../../src/runtime.js';
import { assertFailure, runCli } from './cliProcess.js';

function brandNames(file: string): string[] {
  const db = new SQLite(file, { readonly: true });
  try {
    // A copy taken before the migrations' commits were checkpointed has no tables at all.
    if (!db.prepare("select 1 from sqlite_master where name = 'brands'").get()) return [];
    return db
      .prepare('select name from brands order by name')
      .all()
      .map((row) => (row as { name: string }).name);
  } finally {
    db.close();
  }
}

describe('affitrack backup', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'affitrack-backup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies every commit, those still in the WAL included, while the database is in use', async () => {
    const dataDir = path.join(dir, 'live');
    // The running server: its connections stay open, so nothing checkpoints the WAL on close.
    const ctx = createContext(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    try {
      await migrateToLatest(ctx.db);
      for (const name of ['Alpha', 'Beta']) {
        await ctx.db.transact((trx) => createBrandWithFirstKey(trx, systemClock, { name }));
      }
      // What a plain copy of affitrack.db gets: the latest commits are in affitrack.db-wal only.
      const plainCopy = path.join(dir, 'plain-copy.db');
      copyFileSync(path.join(dataDir, 'affitrack.db'), plainCopy);
      assert.notDeepEqual(brandNames(plainCopy), ['Alpha', 'Beta'], 'the commits are still in the WAL');

      const target = path.join(dir, 'taken.db');
      const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).file, target);
      assert.equal(existsSync(`${target}-wal`), false, 'the backup is one file');
      assert.deepEqual(brandNames(target), ['Alpha', 'Beta']);
    } finally {
      await closeContext(ctx);
    }
  });

  it('never replaces an existing file', async () => {
    const dataDir = path.join(dir, 'existing');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'affitrack.db'), '');
    const target = path.join(dir, 'keep-me.db');
    writeFileSync(target, 'the only good copy');
    const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
    assert.match(assertFailure(result, { exitCode: 2, code: 'conflict', json: true }), /already exists/);
  });

  it('names the target, not DATA_DIR, when the target cannot be written', async () => {
    const dataDir = path.join(dir, 'healthy');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'affitrack.db'), '');
    // A directory no one may create files in, root included (the tests may run as root).
    const target = '/sys/affitrack-backup-test.db';
    const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
    const message = assertFailure(result, { exitCode: 1, code: 'backup_failed', json: true });
    assert.ok(message.includes(`cannot write the backup to ${target}`), message);
    assert.match(message, /FILE/);
    assert.ok(!message.includes(dataDir) && !message.includes('DATA_DIR'), message);
  });

  it('creates nothing and migrates nothing where there is no database', async () => {
    const dataDir = path.join(dir, 'none');
    const result = await runCli(['backup', path.join(dir, 'none.db'), '--json'], { DATA_DIR: dataDir });
    assert.match(assertFailure(result, { exitCode: 2, code: 'not_found', json: true }), /no database to back up/);
    assert.equal(existsSync(dataDir), false);
    assert.equal(existsSync(path.join(dir, 'none.db')), false);
  });

  it('on PostgreSQL points to pg_dump', async () => {
    const result = await runCli(['backup', path.join(dir, 'pg.db')], {
      DATABASE_URL: 'postgres://affitrack@127.0.0.1:1/affitrack',
    });
    assert.match(assertFailure(result, { exitCode: 2, code: 'usage_error', json: false }), /pg_dump/);
  });
});
