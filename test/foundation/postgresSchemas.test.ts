/**
 * A DATABASE_URL may pick a schema (`?options=-c search_path=<schema>`): the tables and the
 * migration records go there together, so several deployments can share one PostgreSQL
 * database, each in its own schema. Each test works in a database of its own, whose
 * `public` schema nothing else touches.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { Migrator } from 'kysely';
import pg from 'pg';
import { ConfigError } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { describeOrSkip, PG_SKIP_REASON, PG_URL } from '../helpers.js';

describeOrSkip('PostgreSQL schemas named by DATABASE_URL', { skip: PG_URL ? false : PG_SKIP_REASON }, () => {
  const name = `schemas_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-schemas-'));
  let databaseUrl = '';
  let admin: pg.Client;
  const open: Database[] = [];

  before(async () => {
    admin = new pg.Client({ connectionString: PG_URL ?? undefined });
    await admin.connect();
    await admin.query(`create database ${name}`);
    const url = new URL(PG_URL ?? '');
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
  });

  after(async () => {
    for (const db of open) await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The service's database on `schema`, chosen the way a user does: in DATABASE_URL. */
  const inSchema = (schema: string) => {
    const url = new URL(databaseUrl);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const db = new Database({ databaseUrl: url.toString(), dataDir });
    open.push(db);
    return db;
  };

  const tablesOf = async (schema: string) =>
    (
      await withClient(
        databaseUrl,
        `select table_name from information_schema.tables where table_schema = '${schema}' order by 1`,
      )
    ).map((row) => row.table_name as string);

  it('migrates two deployments in two schemas of one database, each with its tables and records', async () => {
    await withClient(databaseUrl, 'create schema site_a; create schema site_b');
    const all = Object.keys(await migrationProvider.getMigrations()).sort();
    assert.deepEqual((await migrateToLatest(inSchema('site_a'))).applied, all);
    assert.deepEqual((await migrateToLatest(inSchema('site_b'))).applied, all, 'the second schema is migrated too');
    for (const schema of ['site_a', 'site_b']) {
      const tables = await tablesOf(schema);
      assert.ok(tables.includes('brands'), `${schema} has the tables: ${tables.join(', ')}`);
      assert.ok(tables.includes('kysely_migration'), `${schema} has its migration records`);
    }
    assert.deepEqual(await tablesOf('public'), [], 'nothing is written to public');
    assert.deepEqual((await migrateToLatest(inSchema('site_b'))).applied, []);
  });

  it('upgrades a schema an earlier build migrated, whose records it kept in public', async () => {
    await withClient(databaseUrl, 'create schema site_old');
    const all = Object.keys(await migrationProvider.getMigrations()).sort();
    const [last, beforeLast] = [all.at(-1), all.at(-2)] as [string, string];
    // What earlier builds did: the tables in the URL's schema, the records in public.
    const old = inSchema('site_old');
    const { error } = await new Migrator({
      db: old.admin,
      provider: migrationProvider,
      migrationTableSchema: 'public',
    }).migrateTo(beforeLast);
    assert.equal(error, undefined);
    assert.ok((await tablesOf('site_old')).includes('brands'));

    assert.deepEqual((await migrateToLatest(inSchema('site_old'))).applied, [last], 'only the new migration runs');
    const records = await withClient(databaseUrl, 'select name from site_old.kysely_migration order by name');
    assert.deepEqual(
      records.map((row) => row.name),
      all,
      'the records now live with the tables',
    );
  });

  it('refuses a search_path that names no existing schema, saying so', async () => {
    await assert.rejects(migrateToLatest(inSchema('no_such_schema')), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, /^Invalid DATABASE_URL: its search_path names no schema that exists/);
      return true;
    });
  });
});

async function withClient(url: string, text: string): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query(text);
    return (Array.isArray(result) ? (result.at(-1)?.rows ?? []) : result.rows) as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}
