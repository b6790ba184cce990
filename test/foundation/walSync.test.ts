/**
 * SQLite's commits made durable off the event loop (src/db/walSync.ts): the writer commits
 * without SQLite's fsync, the group committer fsyncs the WAL on the thread pool, and only then
 * acknowledges the batch — while the reader keeps showing the database as it was before.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { Database, SQLITE_FILE } from '../../src/db/database.js';
import { brandRow, migrateTestDatabase } from '../helpers.js';

/** A guard only: a commit that never settles must fail the test, not hang the run. */
const GUARD = { timeout: 30_000 };

let counter = 0;
const brand = (name: string) => brandRow(`wal${++counter}`, name);

/** Brand names in a database file, read by a connection of its own. */
function namesIn(file: string): string[] {
  const db = new SQLite(file, { readonly: true });
  try {
    return db
      .prepare('SELECT name FROM brands ORDER BY name')
      .pluck()
      .all()
      .map((name) => String(name));
  } finally {
    db.close();
  }
}

describe('SQLite commits made durable off the event loop', () => {
  const dirs: string[] = [];
  const newDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'affitrack-wal-'));
    dirs.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('acknowledges a write once its WAL is synced, and shows it to readers only then', GUARD, async () => {
    // The WAL's fsync, held by the test between the commit and the acknowledgement.
    let held: (() => void) | null = null;
    let syncs = 0;
    const syncWal = async (wal: FileHandle) => {
      syncs += 1;
      if (holding) await new Promise<void>((resolve) => (held = resolve));
      await wal.datasync();
    };
    let holding = false;
    const dataDir = newDir();
    const db = new Database({ databaseUrl: null, dataDir, syncWal });
    try {
      await migrateTestDatabase(db);
      const names = async () => (await db.read.selectFrom('brands').select('name').execute()).map((b) => b.name);

      holding = true;
      const before = syncs;
      let acknowledged = false;
      const write = db.transact((trx) => trx.insertInto('brands').values(brand('Held')).execute());
      void write.then(() => {
        acknowledged = true;
      });
      while (syncs === before) await nextTurn();

      // Committed: a connection opened now finds it in the WAL…
      assert.deepEqual(namesIn(path.join(dataDir, SQLITE_FILE)), ['Held']);
      // …but until the fsync returns nothing is acknowledged, and no request can read it.
      await sleep(20);
      assert.equal(acknowledged, false, 'acknowledged before its fsync');
      assert.deepEqual(await names(), [], 'read before its fsync');

      holding = false;
      (held as (() => void) | null)?.();
      await write;
      assert.deepEqual(await names(), ['Held']);
    } finally {
      await db.close();
    }
  });

  it('copies the WAL into the database file as writes go on (checkpoints off the event loop)', GUARD, async () => {
    const dataDir = newDir();
    const file = path.join(dataDir, SQLITE_FILE);
    const db = new Database({ databaseUrl: null, dataDir });
    try {
      await migrateTestDatabase(db);
      // In WAL mode only a checkpoint writes to the database file itself.
      const sizeBefore = statSync(file).size;
      for (let i = 0; i < 250; i++) {
        await db.transact((trx) =>
          trx
            .insertInto('brands')
            .values(brand(`B${i}`))
            .execute(),
        );
      }
      let size = sizeBefore;
      for (let tries = 0; tries < 200 && size <= sizeBefore; tries++) {
        await sleep(25);
        size = statSync(file).size;
      }
      assert.ok(size > sizeBefore, `the database file stayed at ${size} bytes`);
    } finally {
      await db.close();
    }
    assert.equal(namesIn(file).length, 250);
  });
});
