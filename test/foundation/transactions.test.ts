/**
 * `db.transact` inside a unit of work of the same database is a programming error: on
 * SQLite it would wait for its own batch for ever (group commit), on PostgreSQL it would
 * commit apart from the outer transaction. It is refused at once with a clear error; what
 * is legitimate — sequential, concurrent, and after-commit transactions — still runs.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { NestedTransactionError } from '../../src/db/database.js';
import { brandRow, createTestDatabase, migrateTestDatabase, type TestDatabase, testedDialects } from '../helpers.js';

/** A guard only: a nested call on SQLite used to hang, and a hang must fail the test, not the run. */
const GUARD = { timeout: 20_000 };

let counter = 0;
const insertBrand = (name: string) => brandRow(`tx${++counter}`, name);

for (const dialect of testedDialects()) {
  describe(`transactions inside transactions (${dialect})`, () => {
    let database: TestDatabase;
    const names = async () =>
      (await database.db.read.selectFrom('brands').select('name').orderBy('name').execute()).map((r) => r.name);
    before(async () => {
      database = await createTestDatabase(dialect);
      await migrateTestDatabase(database.db);
    });
    after(() => database.drop());

    it(
      'refuses transact inside transact with a NestedTransactionError, and rolls the outer unit back',
      GUARD,
      async () => {
        const outer = database.db.transact(async (trx) => {
          await trx.insertInto('brands').values(insertBrand('outer')).execute();
          await database.db.transact(async (inner) => {
            await inner.insertInto('brands').values(insertBrand('inner')).execute();
          });
        });
        await assert.rejects(outer, (error: unknown) => {
          assert.ok(error instanceof NestedTransactionError, `got ${String(error)}`);
          assert.match(error.message, /inside a transaction.*pass the trx/);
          return true;
        });
        assert.deepEqual(await names(), []);
      },
    );

    it('refuses it however deep in the unit the call is made', GUARD, async () => {
      const deep = async () => {
        await nextTurn();
        await new Promise((resolve) => setTimeout(resolve, 1));
        return database.db.transact(async () => 'never');
      };
      const outcome = await database.db.transact(async () => {
        try {
          await deep();
          return 'ran';
        } catch (error) {
          return error instanceof NestedTransactionError ? 'refused' : String(error);
        }
      });
      assert.equal(outcome, 'refused');
    });

    it('still runs transactions one after another, side by side, and from an after-commit hook', GUARD, async () => {
      await database.db.transact((trx) => trx.insertInto('brands').values(insertBrand('first')).execute());
      await Promise.all(
        ['side a', 'side b', 'side c'].map((name) =>
          database.db.transact((trx) => trx.insertInto('brands').values(insertBrand(name)).execute()),
        ),
      );
      let fromHook: Promise<unknown> | null = null;
      await database.db.transact(async (trx) => {
        await trx.insertInto('brands').values(insertBrand('hooked')).execute();
        database.db.afterCommit(trx, () => {
          fromHook = database.db.transact((t) => t.insertInto('brands').values(insertBrand('after commit')).execute());
        });
      });
      assert.ok(fromHook, 'the after-commit hook ran');
      await fromHook;
      assert.deepEqual(await names(), ['after commit', 'first', 'hooked', 'side a', 'side b', 'side c']);
    });
  });
}

describe("a write that finds another process's write lock (SQLite)", () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
    await migrateTestDatabase(database.db);
  });
  after(() => database.drop());

  it('waits off the event loop, serving reads meanwhile, and commits once the lock is released', GUARD, async () => {
    database.db.waitForLocksBetweenTries();
    // As a CLI command holds it: another connection to the file, inside a write transaction.
    const other = new SQLite(path.join(database.dataDir, 'affitrack.db'));
    try {
      other.exec('BEGIN IMMEDIATE');
      const write = database.db.transact((trx) => trx.insertInto('brands').values(insertBrand('Waited')).execute());
      // In SQLite's busy handler the thread slept for up to 5 s and the write then failed: this
      // timer could not run to release the lock in time.
      await sleep(200);
      const read = await database.db.read.selectFrom('brands').select('id').execute();
      assert.deepEqual(read, [], 'reads are answered while the write waits');
      other.exec('COMMIT');
      await write;
      const written = await database.db.read.selectFrom('brands').select('name').execute();
      assert.deepEqual(written, [{ name: 'Waited' }]);
    } finally {
      other.close();
    }
  });
});
