/**
 * `affitrack backup FILE`: a consistent copy of the SQLite database taken while the server
 * runs, holding the commits that are still only in the WAL.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createBrandWithFirstKey } from '../../src/modules/brands/service.js';
import { closeContext, createContext } from '../../src/runtime.js';
import { CLI, ROOT } from '../chaos/service.js';
import { assertFailure, childEnv, runCli } from './cliProcess.js';

const NOBODY = 65534;

/** Whether every directory from `dir` up may be entered by other users (so nobody can run the CLI from it). */
function othersCanReach(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

/** A DATA_DIR holding a SQLite database of about `megabytes` MB, so that copying it takes many steps. */
function bulkyDataDir(dir: string, megabytes: number): string {
  mkdirSync(dir, { recursive: true });
  const db = new SQLite(path.join(dir, 'affitrack.db'));
  try {
    db.exec('create table filler (bytes blob)');
    const insert = db.prepare('insert into filler values (randomblob(65536))');
    db.transaction(() => {
      for (let i = 0; i < megabytes * 16; i += 1) insert.run();
    })();
  } finally {
    db.close();
  }
  return dir;
}

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

  it('answers a target in a directory that does not exist as a backup that cannot be written (exit 1)', async () => {
    const dataDir = path.join(dir, 'nowhere');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'affitrack.db'), '');
    const target = path.join(dir, 'no-such-directory', 'copy.db');
    const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
    const message = assertFailure(result, { exitCode: 1, code: 'backup_failed', json: true });
    assert.ok(message.includes(`cannot write the backup to ${target}`), message);
    assert.match(message, /is not a directory/);
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

  it('refuses a target that is a directory, naming it, and leaves the directory as it was', async () => {
    const dataDir = path.join(dir, 'to-a-directory');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'affitrack.db'), '');
    const target = path.join(dir, 'a-directory');
    mkdirSync(target);
    const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
    const message = assertFailure(result, { exitCode: 2, code: 'conflict', json: true });
    assert.equal(message, `${target} is a directory: name a new file`);
    assert.deepEqual(readdirSync(target), []);
  });

  it('says in one line that the target directory is not writable, and leaves no file there', async (t) => {
    const dataDir = path.join(dir, 'readable');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'affitrack.db'), '');
    const locked = path.join(dir, 'locked');
    mkdirSync(locked);
    // Root writes anywhere, so as root the CLI runs as nobody — who must reach the checkout and the database.
    const asRoot = process.getuid?.() === 0;
    if (asRoot && !othersCanReach(ROOT)) {
      t.skip(`running as root and ${ROOT} is not reachable by other users, so no unprivileged user can run the CLI`);
      return;
    }
    chmodSync(dir, 0o755);
    chmodSync(dataDir, 0o755);
    chmodSync(path.join(dataDir, 'affitrack.db'), 0o644);
    chmodSync(locked, 0o555);
    const target = path.join(locked, 'backup.db');
    const result = await runCli(
      ['backup', target, '--json'],
      { DATA_DIR: dataDir },
      asRoot ? { uid: NOBODY, gid: NOBODY } : {},
    );
    const message = assertFailure(result, { exitCode: 1, code: 'backup_failed', json: true });
    assert.equal(
      message,
      `cannot write the backup to ${target} (the FILE of affitrack backup FILE): permission denied`,
    );
    assert.deepEqual(readdirSync(locked), []);
  });

  it('leaves neither the target nor a temporary file when the disk fills up mid-way', async () => {
    const dataDir = bulkyDataDir(path.join(dir, 'bulky'), 8);
    const out = path.join(dir, 'full-disk');
    mkdirSync(out);
    const target = path.join(out, 'backup.db');
    // Writes past 1 MiB fail as on a full disk; the database is 8 MiB.
    const result = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir }, { fileSizeLimitKiB: 1024 });
    const message = assertFailure(result, { exitCode: 1, code: 'backup_failed', json: true });
    assert.equal(
      message,
      `cannot write the backup to ${target} (the FILE of affitrack backup FILE): disk I/O error (is the disk full?)`,
    );
    assert.deepEqual(readdirSync(out), [], 'nothing left behind');
    const retried = await runCli(['backup', target, '--json'], { DATA_DIR: dataDir });
    assert.equal(retried.code, 0, retried.stderr);
    assert.deepEqual(readdirSync(out), ['backup.db'], 'the retry is not refused by a leftover');
  });

  it('never shows a partial copy at the target path while the copy is written (killed mid-way)', async () => {
    const dataDir = bulkyDataDir(path.join(dir, 'bulky-kill'), 64);
    const out = path.join(dir, 'killed');
    mkdirSync(out);
    const target = path.join(out, 'backup.db');
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'backup', target], {
      cwd: ROOT,
      env: childEnv({ DATA_DIR: dataDir }),
      stdio: 'ignore',
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    // The first file that appears in the directory is the one being written: kill the backup then.
    const watcher = watch(out, () => child.kill('SIGKILL'));
    try {
      assert.equal(await exited, 'SIGKILL', 'killed while copying, not after');
    } finally {
      watcher.close();
    }
    assert.equal(existsSync(target), false, 'no partial file passes for a backup');
    const left = readdirSync(out);
    assert.ok(
      left.length > 0 && left.every((name) => /^\.backup\.db\.partial-[0-9a-f]+(-journal)?$/.test(name)),
      String(left),
    );
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
