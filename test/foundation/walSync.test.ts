/**
 * SQLite's commits made durable off the event loop (src/db/walSync.ts): the writer commits
 * without SQLite's fsync, the group committer fsyncs the WAL on the thread pool, and only then
 * acknowledges the batch — while the reader keeps showing the database as it was before.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
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

/** The WAL's size, 0 when there is none. */
function walSize(file: string): number {
  return existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0;
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

  it('keeps the WAL near its limit under sustained concurrent writes with reads overlapping', GUARD, async () => {
    const restartBytes = 1024 * 1024;
    const dataDir = newDir();
    const file = path.join(dataDir, SQLITE_FILE);
    // No idle truncation: the limit alone must keep the WAL small while writes go on.
    const db = new Database({ databaseUrl: null, dataDir, walLimits: { restartBytes, pauseMs: 60_000 } });
    let acknowledged = 0;
    try {
      await migrateTestDatabase(db);
      const until = Date.now() + 2500;
      let largest = 0;
      let previous = walSize(file);
      let shrank = 0;
      const writer = async (w: number) => {
        for (let i = 0; Date.now() < until; i++) {
          await db.transact((trx) =>
            trx
              .insertInto('brands')
              .values(brand(`W${w}-${i}-${'x'.repeat(200)}`))
              .execute(),
          );
          acknowledged += 1;
        }
      };
      // Readers overlap every batch, as requests do under load.
      const reader = async () => {
        while (Date.now() < until) {
          await db.read.selectFrom('brands').select('id').orderBy('id', 'desc').limit(5).execute();
          await nextTurn();
        }
      };
      const sampler = async () => {
        while (Date.now() < until) {
          const size = walSize(file);
          if (size < previous) shrank += 1;
          previous = size;
          largest = Math.max(largest, size);
          await sleep(10);
        }
      };
      await Promise.all([
        ...Array.from({ length: 8 }, (_, w) => writer(w)),
        ...Array.from({ length: 4 }, () => reader()),
        sampler(),
      ]);
      assert.ok(acknowledged > 0);
      // While SQLite's connections are open only a TRUNCATE checkpoint shrinks the file.
      assert.ok(shrank > 0, `the WAL was never truncated (it reached ${largest} bytes)`);
      // Past the limit the next batch waits for a truncation; a few batches may land meanwhile.
      assert.ok(largest < 4 * restartBytes, `the WAL reached ${largest} bytes (limit ${restartBytes})`);
    } finally {
      await db.close();
    }
    // Nothing acknowledged went with a truncated WAL.
    assert.equal(namesIn(file).length, acknowledged);
  });

  it('empties the WAL once writes pause, and goes on taking writes', GUARD, async () => {
    const dataDir = newDir();
    const file = path.join(dataDir, SQLITE_FILE);
    const db = new Database({
      databaseUrl: null,
      dataDir,
      walLimits: { restartBytes: 64 * 1024 * 1024, pauseMs: 100 },
    });
    try {
      await migrateTestDatabase(db);
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          db.transact((trx) =>
            trx
              .insertInto('brands')
              .values(brand(`Idle${i}`))
              .execute(),
          ),
        ),
      );
      assert.ok(walSize(file) > 0);
      for (let tries = 0; tries < 200 && walSize(file) > 0; tries++) await sleep(25);
      assert.equal(walSize(file), 0, 'the WAL kept its frames while idle');
      // The emptied WAL takes the next writes as before, and readers see them.
      await db.transact((trx) => trx.insertInto('brands').values(brand('After')).execute());
      const names = await db.read.selectFrom('brands').select('name').execute();
      assert.equal(names.length, 51);
    } finally {
      await db.close();
    }
    assert.equal(namesIn(file).length, 51);
  });
});
