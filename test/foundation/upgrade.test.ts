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
import { sql } from 'kysely';
import { CommandError } from '../../src/cliErrors.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { holdServeLock } from '../../src/db/serveLock.js';
import { createTestDatabase, migrateTestDatabase, type TestDatabase, testedDialects } from '../helpers.js';
import { assertFailure, runCli } from './cliProcess.js';

/** What a newer version leaves behind: a migration this one does not have, booked as run. */
const FUTURE_MIGRATION = '9999_from_a_newer_version';

async function bookFutureMigration(database: TestDatabase): Promise<void> {
  const table = database.schema ? sql.table(`${database.schema}.kysely_migration`) : sql.table('kysely_migration');
  await sql`insert into ${table} (name, timestamp) values (${FUTURE_MIGRATION}, ${new Date().toISOString()})`.execute(
    database.db.admin,
  );
}

for (const dialect of testedDialects()) {
  describe(`a database migrated by a newer version (${dialect})`, () => {
    it('is refused as database_too_new naming the migration, not as an unexpected error', async () => {
      const database = await createTestDatabase(dialect);
      try {
        await migrateTestDatabase(database.db);
        await bookFutureMigration(database);
        await assert.rejects(migrateToLatest(database.db), (error: unknown) => {
          assert.ok(error instanceof CommandError, String(error));
          assert.equal(error.code, 'database_too_new');
          assert.equal(error.exitCode, 1);
          assert.match(
            error.message,
            new RegExp(`migrated by a newer version of Affitrack \\(it has run ${FUTURE_MIGRATION}`),
          );
          assert.match(error.message, /run that version, or restore a backup taken before the upgrade$/);
          return true;
        });
      } finally {
        await database.db.close();
        await database.drop();
      }
    });
  });
}

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

  it('an older version on a database a newer one migrated says so in one line and exits 1', async () => {
    const env = { DATA_DIR: path.join(dataDir, 'newer') };
    assert.equal((await runCli(['migrate', '--json'], env)).code, 0);
    const file = new SQLite(path.join(env.DATA_DIR, 'affitrack.db'));
    try {
      file.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run(FUTURE_MIGRATION, '2030-01-01');
    } finally {
      file.close();
    }
    const result = await runCli(['brands', 'create', '--name', 'Rolled back', '--json'], env);
    const message = assertFailure(result, { exitCode: 1, code: 'database_too_new', json: true });
    assert.match(message, /^the database was migrated by a newer version of Affitrack/);
  });
});
