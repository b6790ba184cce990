/**
 * Test harness: every test file gets its own database (a fresh SQLite directory, or a fresh
 * PostgreSQL schema when TEST_DATABASE_URL is set) and builds the real app on it.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Migrator } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { type Clock, ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { Database, type Dialect } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { migrationProvider } from '../src/db/migrations/index.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';
import { closeContext, createContext, createLogger } from '../src/runtime.js';

export const PG_URL = process.env.TEST_DATABASE_URL || null;
export const REDIS_URL = process.env.TEST_REDIS_URL || null;

export const PG_SKIP_REASON = 'PostgreSQL not configured: set TEST_DATABASE_URL';
export const REDIS_SKIP_REASON = 'Redis not configured: set TEST_REDIS_URL';

/** The dialects this run covers: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const DIALECTS: Dialect[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];

/**
 * `describe`, except that a suite skipped for a reason is reported as one skipped test: the
 * runner's summary counts skipped tests but not skipped suites, and a run must say what it
 * left out ("skipped N", each with its reason).
 */
export function describeOrSkip(name: string, { skip }: { skip: string | false }, fn: () => void): void {
  if (skip) it(name, { skip }, () => {});
  else describe(name, fn);
}

/** Options of a suite about several processes sharing one database, which only PostgreSQL is built for. */
export function postgresOnly(dialect: Dialect): { skip: string | false } {
  return { skip: dialect === 'postgres' ? false : 'runs on PostgreSQL, where many processes share a database' };
}

/**
 * The dialects a storage test file runs its suites on (`for (const dialect of testedDialects())`).
 * Without TEST_DATABASE_URL the file's PostgreSQL variant is reported as a skipped test, so the
 * summary counts what this run did not cover instead of leaving it out silently.
 */
export function testedDialects(): Dialect[] {
  // The runner gives each test file a process of its own: argv[1] names the file in the report.
  const file = process.argv[1] ? path.relative(process.cwd(), process.argv[1]) : 'this file';
  if (!PG_URL) it(`${file} on PostgreSQL`, { skip: PG_SKIP_REASON }, () => {});
  return DIALECTS;
}

/** A parsed JSON response body. */
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies of every route, read field by field by the tests
export type JsonBody = any;

export interface TestBrand {
  id: string;
  slug: string;
  apiKey: string;
  keyId: string;
}

export interface TestEnv {
  ctx: AppContext;
  app: FastifyInstance;
  clock: ManualClock;
  brand: TestBrand;
  logs: string[];
  createBrand(name?: string, options?: { timezone?: string }): Promise<TestBrand>;
  /** `app.inject` with the JSON header and a Bearer key already set. */
  request(
    method: string,
    url: string,
    options?: { body?: unknown; key?: string | null; headers?: Record<string, string> },
  ): Promise<{ status: number; body: JsonBody; headers: Record<string, string | string[] | undefined> }>;
  close(): Promise<void>;
}

export interface TestDatabase {
  db: Database;
  url: string | null;
  schema: string | null;
  dataDir: string;
  drop(): Promise<void>;
}

/** A fresh, empty database of the given dialect. */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-test-'));
  if (dialect === 'sqlite') {
    const db = new Database({ databaseUrl: null, dataDir });
    return {
      db,
      url: null,
      schema: null,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  if (!PG_URL) throw new Error('TEST_DATABASE_URL is not set');
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const db = new Database({ databaseUrl: PG_URL, dataDir, schema, poolSize: 5 });
  return {
    db,
    url: PG_URL,
    schema,
    dataDir,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A second, independent handle on the same database (its own SQLite connections, or its own
 * PostgreSQL pool on the same schema), as another process would have. Dropping it only
 * closes it: the data belongs to the first.
 */
export function anotherHandle(database: TestDatabase): TestDatabase {
  const db = new Database({
    databaseUrl: database.url,
    dataDir: database.dataDir,
    ...(database.schema ? { schema: database.schema, poolSize: 5 } : {}),
  });
  return { ...database, db, drop: () => db.close() };
}

/** A brands row to insert straight from a unit of work; `tag` makes its id and slug unique. */
export function brandRow(tag: string, name: string) {
  return {
    id: `brd_${tag}`,
    name,
    slug: tag,
    timezone: 'UTC',
    currency: 'USD',
    fraud_threshold: 75,
    auto_ban_high_risk_clicks: null,
    auto_ban_window_minutes: null,
    created_at: 0,
    updated_at: 0,
  };
}

/**
 * One or two app instances on one fresh database (two stand for two processes), each
 * listening on a loopback port; `cleanup` is given what closes them, in the order to run it
 * reversed. Resolves to the instances and their base URLs.
 */
export async function servedInstances(
  dialect: Dialect,
  instances: 1 | 2,
  env: Record<string, string>,
  cleanup: Array<() => Promise<void>>,
): Promise<{ envs: TestEnv[]; bases: string[] }> {
  const database = await createTestDatabase(dialect);
  cleanup.push(() => database.drop());
  const first = await createTestEnv(dialect, { env, database });
  cleanup.push(async () => {
    await first.close();
    await first.ctx.db.close();
  });
  const envs = [first];
  if (instances === 2) {
    const second = anotherHandle(database);
    const other = await createTestEnv(dialect, { env, database: second, clock: first.clock });
    cleanup.push(async () => {
      await other.close();
      await second.drop();
    });
    envs.push(other);
  }
  const bases = await Promise.all(
    envs.map(async (instance) => {
      await instance.app.listen({ port: 0, host: '127.0.0.1' });
      return `http://127.0.0.1:${(instance.app.server.address() as AddressInfo).port}`;
    }),
  );
  return { envs, bases };
}

/**
 * `migrateToLatest`, retried when PostgreSQL reports a schema, table or column vanishing
 * under it: Kysely's migrator introspects the tables of every schema before taking its lock,
 * and other test files drop their own schemas and migrate their own tables concurrently
 * (SQLSTATE 3F000; 42P01 and 42703, seen as `column "fraud_threshold" of relation "brands"
 * does not exist` in a fresh-clone run). Never seen outside tests, where nothing drops
 * schemas mid-run.
 */
export async function migrateTestDatabase(db: Database): Promise<{ applied: string[] }> {
  return retriedWhileSchemasVanish(() => migrateToLatest(db));
}

/** Migrates `database` up to and including migration `name` only, retried as above. */
export async function migrateTestDatabaseTo(database: TestDatabase, name: string): Promise<void> {
  const migrator = new Migrator({
    db: database.db.admin,
    provider: migrationProvider,
    ...(database.schema ? { migrationTableSchema: database.schema } : {}),
  });
  await retriedWhileSchemasVanish(async () => {
    const { error } = await migrator.migrateTo(name);
    if (error) throw error;
  });
}

/** SQLSTATEs of a schema, table or column another test file dropped or altered meanwhile. */
const VANISHED = new Set(['3F000', '42P01', '42703']);

async function retriedWhileSchemasVanish<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!VANISHED.has((error as { code?: string }).code ?? '') || attempt >= 5) throw error;
    }
  }
}

export interface TestEnvOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  /** An existing database to share (e.g. two app instances on one database). */
  database?: TestDatabase;
}

export async function createTestEnv(dialect: Dialect, options: TestEnvOptions = {}): Promise<TestEnv> {
  const owned = !options.database;
  const database = options.database ?? (await createTestDatabase(dialect));
  const clock = options.clock ?? new ManualClock();
  const config = loadConfig({
    DATA_DIR: database.dataDir,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const ctx = createContext(config, { clock, db: database.db, logger: createLogger(config, sink) });
  await migrateTestDatabase(ctx.db);
  const app = await buildApp(ctx);

  const createBrand = async (name = 'Test Brand', brandOptions: { timezone?: string } = {}): Promise<TestBrand> => {
    const { brand, secret, key } = await ctx.db.transact((trx) =>
      createBrandWithFirstKey(trx, clock, { name, timezone: brandOptions.timezone }),
    );
    return { id: brand.id, slug: brand.slug, apiKey: secret, keyId: key.id };
  };
  const brand = await createBrand();

  return {
    ctx,
    app,
    clock,
    brand,
    logs,
    createBrand,
    async request(method, url, requestOptions = {}) {
      const key = requestOptions.key === undefined ? brand.apiKey : requestOptions.key;
      const headers: Record<string, string> = { 'content-type': 'application/json', ...requestOptions.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      const response = await app.inject({
        method: method as 'GET',
        url,
        headers,
        payload: requestOptions.body === undefined ? undefined : JSON.stringify(requestOptions.body),
      });
      let body: unknown = response.body;
      if (String(response.headers['content-type'] ?? '').includes('json') && response.body) body = response.json();
      return { status: response.statusCode, body, headers: response.headers as Record<string, string> };
    },
    async close() {
      await app.close();
      if (owned) {
        await closeContext(ctx);
        await database.drop();
      } else {
        await ctx.rateLimiter.close();
      }
    },
  };
}

/** Asserts the spec's error shape and returns the error object. */
export function expectError(
  response: { status: number; body: JsonBody },
  status: number,
  code: string,
): { code: string; message: string; details?: Array<{ path: string; message: string }> } {
  if (response.status !== status || response.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${response.status} ${JSON.stringify(response.body)}`);
  }
  if (typeof response.body.error.message !== 'string' || response.body.error.message.length === 0) {
    throw new Error(`error.message missing: ${JSON.stringify(response.body)}`);
  }
  return response.body.error;
}

export type { Clock };
