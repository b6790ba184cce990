/**
 * One storage interface over two dialects. Reads go through `read`; every write goes
 * through `transact`, which on SQLite is group-committed (see groupCommit.ts) and on
 * PostgreSQL is an ordinary pooled transaction.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { GroupCommitter } from './groupCommit.js';
import type { Schema } from './schema.js';
import { SharedFileSqliteDialect } from './sqliteDialect.js';
import type { TransactWork, Trx } from './types.js';

export type { Queryable, TransactWork, Trx } from './types.js';
export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseOptions {
  /** `postgres://…`; when null, embedded SQLite in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  /** PostgreSQL schema to use (tests give each file its own). */
  schema?: string;
  /** SQLite file name inside `dataDir`. */
  sqliteFile?: string;
  poolSize?: number;
}

interface SettleHook {
  onCommit: () => void;
  onRollback?: (() => void) | undefined;
}

/** Pause before a lost LISTEN connection is re-opened. */
const LISTEN_RETRY_MS = 1000;

/** How long a SQLite writer waits for another process's lock before failing. */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

// PostgreSQL returns BIGINT (20) and NUMERIC (1700, e.g. SUM of BIGINT) as strings so no
// precision is lost. Every such value here is an epoch-ms timestamp or a cents total, far
// below 2^53, so numbers are safe and keep both dialects returning the same types.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export class Database {
  readonly dialect: Dialect;
  readonly schema: string;
  /** Connection for reads. On SQLite a second connection, so reads never queue behind a write batch. */
  readonly read: Kysely<Schema>;
  private readonly write: Kysely<Schema>;
  private readonly committer: GroupCommitter | null;
  /** PostgreSQL: hooks of each open transaction. */
  private readonly trxHooks = new WeakMap<Trx, SettleHook[]>();
  /** SQLite: hooks of the unit of work running in the current group-commit batch. */
  private unitHooks: SettleHook[] | null = null;
  private readonly pool: pg.Pool | null;
  private readonly connectionString: string | null;

  constructor(options: DatabaseOptions) {
    if (options.databaseUrl) {
      this.dialect = 'postgres';
      this.connectionString = options.databaseUrl;
      this.schema = options.schema ?? 'public';
      this.pool = new pg.Pool({
        connectionString: options.databaseUrl,
        max: options.poolSize ?? 10,
        options: this.schema === 'public' ? undefined : `-c search_path=${this.schema}`,
      });
      // A client's error (e.g. the server restarting) must not crash the process: the
      // query in progress fails (and is answered 503), the pool replaces the client. The
      // pool's 'error' covers idle clients only, so checked-out clients get a listener too.
      this.pool.on('error', () => {});
      this.pool.on('connect', (client) => client.on('error', () => {}));
      this.write = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: this.pool }) });
      this.read = this.write;
      this.committer = null;
    } else {
      this.dialect = 'sqlite';
      this.connectionString = null;
      this.schema = 'main';
      this.pool = null;
      mkdirSync(options.dataDir, { recursive: true });
      const file = path.join(options.dataDir, options.sqliteFile ?? 'affitrack.db');
      const writer = openSqlite(file);
      const reader = openSqlite(file);
      this.write = new Kysely<Schema>({ dialect: new SharedFileSqliteDialect(writer) });
      this.read = new Kysely<Schema>({ dialect: new SqliteDialect({ database: reader }) });
      this.committer = new GroupCommitter(this.write);
    }
  }

  /**
   * Runs `work` in a transaction and resolves once it is durably committed. `work` must
   * do all its writes through the `trx` it is given and must not call `transact` again.
   */
  async transact<T>(work: TransactWork<T>): Promise<T> {
    const hooks: SettleHook[] = [];
    let result: T;
    try {
      if (this.committer) {
        // A batch shares one transaction but each unit commits or rolls back alone (its
        // savepoint): hooks are kept per unit. Units of a batch run one after another, so
        // the unit running when `afterCommit` is called is the one that registers.
        result = await this.committer.run(
          async (trx) => {
            this.unitHooks = hooks;
            try {
              return await work(trx);
            } finally {
              this.unitHooks = null;
            }
          },
          () => {},
        );
      } else {
        result = await this.write.transaction().execute(async (trx) => {
          this.trxHooks.set(trx, hooks);
          return work(trx);
        });
      }
    } catch (error) {
      for (const hook of hooks) hook.onRollback?.();
      throw error;
    }
    for (const hook of hooks) hook.onCommit();
    return result;
  }

  /**
   * Registers `onCommit` to run once `trx`'s unit of work is durably committed, or
   * `onRollback` if it is not (the work threw, or the commit failed). Exactly one of them
   * runs, so a hook may hand committed rows to someone in this process (deliveries to send)
   * and undo a reservation otherwise.
   */
  afterCommit(trx: Trx, onCommit: () => void, onRollback?: () => void): void {
    const hooks = this.unitHooks ?? this.trxHooks.get(trx);
    if (!hooks) throw new Error('afterCommit called outside a transaction of this database');
    hooks.push({ onCommit, onRollback });
  }

  /**
   * PostgreSQL only: LISTEN on `channel` with a dedicated connection, calling `onNotify`
   * for each notification. Reconnects after errors (callers also poll, so a gap only
   * delays work). Returns a function that stops listening.
   */
  listen(channel: string, onNotify: () => void): () => Promise<void> {
    if (!this.connectionString) return async () => {};
    let client: pg.Client | null = null;
    let stopped = false;
    let retry: NodeJS.Timeout | null = null;
    const connect = async () => {
      if (stopped) return;
      const next = new pg.Client({ connectionString: this.connectionString ?? undefined });
      next.on('notification', onNotify);
      next.on('error', () => {
        next.end().catch(() => {});
        if (!stopped) retry = setTimeout(connect, LISTEN_RETRY_MS);
      });
      try {
        await next.connect();
        await next.query(`LISTEN ${channel}`);
        client = next;
        if (stopped) await next.end();
      } catch {
        next.end().catch(() => {});
        if (!stopped) retry = setTimeout(connect, LISTEN_RETRY_MS);
      }
    };
    void connect();
    return async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => {});
    };
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.read);
  }

  /**
   * PostgreSQL only: the pool, for one statement that commits on its own — a round trip,
   * where `transact` takes three (BEGIN, the statement, COMMIT). Only for a write that needs
   * no atomicity with any other (the shared rate-limit counter); on SQLite every write must
   * go through `transact` (group commit), so there is none.
   */
  get standaloneWriter(): Kysely<Schema> {
    if (this.dialect !== 'postgres') throw new Error('standalone writes exist on PostgreSQL only');
    return this.write;
  }

  /** Kysely instance for administrative work (migrations). */
  get admin(): Kysely<Schema> {
    return this.write;
  }

  async close(): Promise<void> {
    await this.committer?.drain();
    if (this.read !== this.write) await this.read.destroy();
    await this.write.destroy();
  }
}

/** Prepared statements kept per connection; the app issues a few dozen distinct queries. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; preparing costs more than running a point lookup, so
 * statements are cached by SQL text (bounded, least recently used evicted). better-sqlite3
 * statements are reusable and Kysely runs each to completion before the next.
 */
function withStatementCache(db: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (statement) {
      cache.delete(source);
    } else {
      statement = prepare(source);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    }
    cache.set(source, statement);
    return statement;
  }) as typeof db.prepare;
  return db;
}

function openSqlite(file: string): SQLite.Database {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  // FULL: a commit is on disk before it is acknowledged (WAL+NORMAL may lose the last commits on power loss).
  db.pragma('synchronous = FULL');
  db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  db.pragma('foreign_keys = ON');
  return withStatementCache(db);
}
