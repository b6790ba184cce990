/**
 * On PostgreSQL the application's parameterised statements run as named prepared statements
 * (db/namedStatements.ts), and a schema change made by another process (a migration during
 * a rolling deploy) must not break them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { createTestDatabase, describeOrSkip, PG_SKIP_REASON, PG_URL, type TestDatabase } from '../helpers.js';

describeOrSkip('named prepared statements (postgres)', { skip: PG_URL ? false : PG_SKIP_REASON }, () => {
  let database: TestDatabase;
  /** One connection, so a statement prepared once is met again on the same connection. */
  let db: Database;
  let dataDir: string;
  let other: pg.Client;

  before(async () => {
    database = await createTestDatabase('postgres');
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-named-'));
    db = new Database({ databaseUrl: PG_URL, dataDir, schema: database.schema ?? 'public', poolSize: 1 });
    other = new pg.Client({ connectionString: PG_URL ?? undefined });
    await other.connect();
    await other.query(`set search_path = ${database.schema}`);
    await other.query('create table things (id integer primary key, label text)');
    await other.query("insert into things values (1, 'one'), (2, 'two')");
  });
  after(async () => {
    await other.end();
    await db.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const labelOf = (id: number) => sql<{ id: number; label: string }>`select * from things where id = ${id}`;

  it('prepares a parameterised statement once per connection, under a name', async () => {
    const text = labelOf(1).compile(db.read).sql;
    assert.deepEqual((await labelOf(1).execute(db.read)).rows, [{ id: 1, label: 'one' }]);
    assert.deepEqual((await labelOf(2).execute(db.read)).rows, [{ id: 2, label: 'two' }]);
    const prepared = await sql<{
      name: string;
      statement: string;
    }>`select name, statement from pg_prepared_statements`.execute(db.read);
    const ours = prepared.rows.filter((row) => row.statement === text);
    assert.equal(ours.length, 1, JSON.stringify(prepared.rows));
    assert.match(ours[0]?.name ?? '', /^affitrack_\d+$/);
  });

  it('sends a statement with a long IN list unnamed', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => i + 1);
    const many = sql<{ id: number }>`select id from things where id in (${sql.join(ids)}) order by id`;
    assert.deepEqual(
      (await many.execute(db.read)).rows.map((row) => row.id),
      [1, 2],
    );
    const text = many.compile(db.read).sql;
    const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db.read);
    assert.equal(prepared.rows.filter((row) => row.statement === text).length, 0);
  });

  it('prepares a statement again when the server no longer has it (a pooler discarded it)', async () => {
    assert.equal((await labelOf(1).execute(db.read)).rows[0]?.id, 1);
    // Behind pg's back: it still believes the statement is prepared on this connection.
    await sql`deallocate all`.execute(db.read);
    assert.equal((await labelOf(1).execute(db.read)).rows[0]?.id, 1);
  });

  it('sends statements unnamed when DATABASE_NAMED_STATEMENTS is off', async () => {
    const plainDir = mkdtempSync(path.join(tmpdir(), 'affitrack-plain-'));
    const plain = new Database({
      databaseUrl: PG_URL,
      dataDir: plainDir,
      schema: database.schema ?? 'public',
      poolSize: 1,
      namedStatements: loadConfig({ DATABASE_NAMED_STATEMENTS: 'false' }).databaseNamedStatements,
    });
    try {
      assert.deepEqual((await labelOf(1).execute(plain.read)).rows[0]?.id, 1);
      const prepared = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(plain.read);
      assert.deepEqual(prepared.rows, []);
    } finally {
      await plain.close();
      rmSync(plainDir, { recursive: true, force: true });
    }
  });

  it('prepares a statement again when another process changed the result type of its table', async () => {
    assert.deepEqual((await labelOf(1).execute(db.read)).rows, [{ id: 1, label: 'one' }]);
    await other.query('alter table things add column colour text');
    // Outside a transaction the statement is prepared anew at once.
    assert.deepEqual((await labelOf(1).execute(db.read)).rows, [{ id: 1, label: 'one', colour: null }]);

    await other.query('alter table things add column size integer');
    // Inside one, the transaction fails (PostgreSQL aborted it); the next one succeeds.
    await assert.rejects(
      db.transact((trx) => labelOf(2).execute(trx)),
      (error: { code?: string }) => error.code === '0A000',
    );
    const again = await db.transact((trx) => labelOf(2).execute(trx));
    assert.deepEqual(again.rows, [{ id: 2, label: 'two', colour: null, size: null }]);
  });
});
