/**
 * One storage interface over two dialects. Reads go through `read`; every write goes
 * through `transact`, which on SQLite is group-committed (see groupCommit.ts) and on
 * PostgreSQL is an ordinary pooled transaction.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { ChangeEpoch, watchingChanges } from './changes.js';
import { GroupCommitter } from './groupCommit.js';
import { nameStatements } from './namedStatements.js';
import { runPreparedDirectly } from './prepared.js';
import type { Schema } from './schema.js';
import { LiteralLimitSqliteDialect, SharedFileSqliteDialect } from './sqliteDialect.js';
import type { TransactWork, Trx } from './types.js';
import { type SyncWal, type WalLimits, WalSync } from './walSync.js';

export type { Queryable, TransactWork, Trx } from './types.js';
export type Dialect = 'sqlite' | 'postgres';

/**
 * Lets a request commit its answer in the same transaction as its work (an Idempotency-Key,
 * see http/idempotency.ts). While such a request runs, its first `transact` goes through
 * the binding, which runs it with `run`; every other `transact` is unaffected.
 */
export interface TransactionBinding {
  transact<T>(work: TransactWork<T>, run: <U>(work: TransactWork<U>) => Promise<U>): Promise<T>;
}
export const transactionBinding = new AsyncLocalStorage<TransactionBinding>();

export interface DatabaseOptions {
  /** `postgres://…`; when null, embedded SQLite in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  /** PostgreSQL schema to use (tests give each file its own). */
  schema?: string;
  /** SQLite file name inside `dataDir`. */
  sqliteFile?: string;
  poolSize?: number;
  /** PostgreSQL: name parameterised statements (namedStatements.ts); default true. */
  namedStatements?: boolean;
  /** SQLite: how the WAL is made durable (walSync.ts); tests hold a commit before its fsync. */
  syncWal?: SyncWal;
  /** SQLite: when the WAL is emptied (walSync.ts); tests lower the defaults. */
  walLimits?: WalLimits;
}

interface SettleHook {
  onCommit: () => void;
  onRollback?: (() => void) | undefined;
}

/** Pause before a lost LISTEN connection is re-opened. */
const LISTEN_RETRY_MS = 1000;

/** How long SQLite waits for another process's lock inside its busy handler (blocking the thread) before failing. */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

// PostgreSQL returns BIGINT (20) and NUMERIC (1700, e.g. SUM of BIGINT) as strings so no
// precision is lost. Every such value here is an epoch-ms timestamp or a cents total, far
// below 2^53, so numbers are safe and keep both dialects returning the same types.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/**
 * `transact` called while a unit of work of the same database is running. On SQLite the
 * inner unit would wait for the batch the outer one is part of — for ever; on PostgreSQL it
 * would commit on its own, outside the outer transaction. Either way the code is wrong:
 * the unit must do its writes through the `trx` it was given.
 */
/** The SQLite database's file in DATA_DIR. */
export const SQLITE_FILE = 'affitrack.db';

export class NestedTransactionError extends Error {
  constructor() {
    super('db.transact was called inside a transaction of the same database: pass the trx you were given instead');
    this.name = 'NestedTransactionError';
  }
}

export class Database {
  readonly dialect: Dialect;
  /** Connection for reads. On SQLite a second connection, so reads never queue behind a write batch. */
  readonly read: Kysely<Schema>;
  private readonly write: Kysely<Schema>;
  private readonly committer: GroupCommitter | null;
  private readonly walSync: WalSync | null = null;
  /** SQLite: the writer's own connection. */
  private readonly writer: SQLite.Database | null = null;
  /**
   * Set while a unit of work of `transact` runs (through every await inside it): its
   * commit/rollback hooks. Refuses nested `transact` calls and gives `afterCommit` the unit
   * it belongs to, also inside a SQLite batch where units share one transaction.
   */
  private readonly unitOfWork = new AsyncLocalStorage<SettleHook[]>();
  /**
   * PostgreSQL: a connection of its own for `transactAside` (opened at its first use), so
   * those writes never queue in the pool behind the request load.
   */
  private readonly aside: Kysely<Schema> | null;
  /** PostgreSQL: the server processes of this pool's connections, whose NOTIFYs `listen` skips. */
  private readonly ownBackends = new Set<number>();
  private readonly connectionString: string | null;
  /** Moves on whenever data the hot paths cache may have changed (see cache.ts). */
  private readonly changes = new ChangeEpoch();
  /** SQLite: `PRAGMA data_version` on the writer, which moves when another connection commits. */
  private readonly dataVersion: SQLite.Statement | null = null;
  private lastDataVersion: unknown = null;
  private dataVersionRead = false;

  constructor(options: DatabaseOptions) {
    if (options.databaseUrl) {
      this.dialect = 'postgres';
      this.connectionString = options.databaseUrl;
      const openPool = (max: number) => {
        const pool = new pg.Pool({
          connectionString: options.databaseUrl ?? undefined,
          max,
          options: options.schema ? `-c search_path=${options.schema}` : undefined,
        });
        // A client's error (e.g. the server restarting) must not crash the process: the
        // query in progress fails (and is answered 503), the pool replaces the client. The
        // pool's 'error' covers idle clients only, so checked-out clients get a listener too.
        pool.on('error', () => {});
        pool.on('connect', (client) => {
          client.on('error', () => {});
          this.ownBackends.add(backendOf(client));
        });
        pool.on('remove', (client) => this.ownBackends.delete(backendOf(client)));
        if (options.namedStatements !== false) nameStatements(pool);
        return new Kysely<Schema>({ dialect: watchingChanges(new PostgresDialect({ pool }), this.changes) });
      };
      this.write = openPool(options.poolSize ?? 10);
      this.aside = openPool(1);
      this.read = this.write;
      this.committer = null;
    } else {
      this.dialect = 'sqlite';
      this.connectionString = null;
      this.aside = null;
      ensureDirectory(options.dataDir);
      const file = path.join(options.dataDir, options.sqliteFile ?? SQLITE_FILE);
      const writer = openSqlite(file);
      // Every unit of a group-commit batch runs in a savepoint, which copies each page the
      // unit changes into a sub-journal; in a temporary file that tripled the cost of a
      // click's inserts (29 → 13 µs for the click row, 21 → 7 µs for its fact, batches of
      // 20). In memory it is a few pages per unit, dropped at its release. The reader keeps
      // the default: its big sorts (dashboard lists, CSV exports) may need the disk.
      writer.pragma('temp_store = MEMORY');
      this.writer = writer;
      const reader = openSqlite(file);
      this.write = new Kysely<Schema>({ dialect: watchingChanges(new SharedFileSqliteDialect(writer), this.changes) });
      this.read = new Kysely<Schema>({ dialect: new LiteralLimitSqliteDialect(reader) });
      runPreparedDirectly(this.read, reader);
      this.walSync = new WalSync(writer, reader, file, options.syncWal, options.walLimits);
      this.committer = new GroupCommitter(this.write, writer, this.walSync);
      this.dataVersion = writer.prepare('PRAGMA data_version').pluck();
    }
  }

  /**
   * SQLite, for a process serving requests (after its migrations): a write transaction that
   * finds another process's write lock (a CLI command's) waits between tries, off the event
   * loop (sqliteDialect.ts), instead of in SQLite's busy handler, which would freeze every
   * request meanwhile. Fails as before after SQLITE_LOCK_WAIT_MS.
   */
  waitForLocksBetweenTries(): void {
    this.writer?.pragma('busy_timeout = 0');
  }

  /** Reports the size of every SQLite group-commit batch to `listener` (metrics); PostgreSQL has none. */
  onGroupCommit(listener: (size: number) => void): void {
    if (this.committer) this.committer.onBatch = listener;
  }

  /**
   * The epoch cached rows are checked against: it moves on when this process commits a
   * change to a cached table, and on SQLite whenever another connection (another process)
   * committed anything since the last call.
   */
  cacheEpoch(): number {
    // Read once per turn of the event loop: the pragma costs more than the lookups it
    // guards, and requests handled in one turn may share the answer.
    if (this.dataVersion && !this.dataVersionRead) {
      this.dataVersionRead = true;
      setImmediate(() => {
        this.dataVersionRead = false;
      });
      const version = this.dataVersion.get();
      if (version !== this.lastDataVersion) {
        this.lastDataVersion = version;
        this.changes.bump();
      }
    }
    return this.changes.value;
  }

  /**
   * Runs `work` in a transaction and resolves once it is durably committed. `work` must
   * do all its writes through the `trx` it is given; calling `transact` again from inside
   * it is refused with a NestedTransactionError (an AsyncLocalStorage marks the unit).
   */
  async transact<T>(work: TransactWork<T>): Promise<T> {
    if (this.unitOfWork.getStore()) throw new NestedTransactionError();
    const binding = transactionBinding.getStore();
    if (binding) return binding.transact(work, (unit) => this.transactNow(unit));
    return this.transactNow(work);
  }

  /**
   * `transact` on a connection of its own (PostgreSQL), which never waits in the pool's
   * queue behind the request load: for small writes whose timing other processes rely on —
   * the delivery heartbeat, by which they tell a busy worker from a dead one. On SQLite it is
   * `transact`: one writer, and a batch's wait is milliseconds, not a queue of requests.
   */
  async transactAside<T>(work: TransactWork<T>): Promise<T> {
    if (this.unitOfWork.getStore()) throw new NestedTransactionError();
    return this.transactNow(work, this.aside ?? undefined);
  }

  private async transactNow<T>(work: TransactWork<T>, via?: Kysely<Schema>): Promise<T> {
    // The unit's commit hooks ride in the AsyncLocalStorage: inside a SQLite group-commit
    // batch several units share one transaction, but each commits or rolls back alone (its
    // savepoint), and its hooks must follow its own fate.
    const hooks: SettleHook[] = [];
    const unit: TransactWork<T> = (trx) => this.unitOfWork.run(hooks, () => work(trx));
    let result: T;
    try {
      result = via
        ? await via.transaction().execute(unit)
        : this.committer
          ? await this.committer.run(unit)
          : await this.write.transaction().execute(unit);
    } catch (error) {
      for (const hook of hooks) hook.onRollback?.();
      throw error;
    }
    for (const hook of hooks) hook.onCommit();
    return result;
  }

  /**
   * Registers `onCommit` to run once the unit of work running `trx` is durably committed, or
   * `onRollback` if it is not (the work threw, or the commit failed). Exactly one of them
   * runs, so a hook may hand committed rows to someone in this process (deliveries to send)
   * and undo a reservation otherwise.
   */
  afterCommit(_trx: Trx, onCommit: () => void, onRollback?: () => void): void {
    const hooks = this.unitOfWork.getStore();
    if (!hooks) throw new Error('afterCommit called outside a unit of work of this database');
    hooks.push({ onCommit, onRollback });
  }

  /**
   * PostgreSQL only: LISTEN on `channel` with a dedicated connection, calling `onNotify`
   * for each notification sent by another process (this one tells itself directly, and its
   * own NOTIFYs would only repeat that). Reconnects after errors (callers also poll, so a
   * gap only delays work). Returns a function that stops listening.
   */
  listen(channel: string, onNotify: () => void): () => Promise<void> {
    if (!this.connectionString) return async () => {};
    let client: pg.Client | null = null;
    let stopped = false;
    let retry: NodeJS.Timeout | null = null;
    const connect = async () => {
      if (stopped) return;
      const next = new pg.Client({ connectionString: this.connectionString ?? undefined });
      next.on('notification', (message) => {
        if (!this.ownBackends.has(message.processId)) onNotify();
      });
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
   * Whether a hot path may store its writes in a batch statement of its own instead of
   * through `transact` (PostgreSQL, see postgresBatch.ts): not while a request binds its
   * transaction (an Idempotency-Key), since the batch would commit outside it.
   */
  get batchesWrites(): boolean {
    return this.dialect === 'postgres' && transactionBinding.getStore() === undefined;
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

  /**
   * Resolves once every commit so far is on disk. Units of work are durable when `transact`
   * resolves; this is for work done through `admin` (migrations), which bypasses it.
   */
  async syncToDisk(): Promise<void> {
    await this.walSync?.sync();
  }

  /** Kysely instance for administrative work (migrations). */
  get admin(): Kysely<Schema> {
    return this.write;
  }

  async close(): Promise<void> {
    await this.committer?.drain();
    await this.walSync?.close();
    if (this.read !== this.write) await this.read.destroy();
    await this.aside?.destroy();
    await this.write.destroy();
  }
}

/** The server process of a connection (pg sets it at connect; its types leave it out). */
function backendOf(client: pg.PoolClient): number {
  return (client as unknown as { processID: number }).processID;
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

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdir spins for ever on a directory it
 * cannot create under /proc. An existing file is left to SQLite, whose open then fails.
 */
function ensureDirectory(dir: string): void {
  if (existsSync(dir)) return;
  const parent = path.dirname(dir);
  if (parent !== dir) ensureDirectory(parent);
  mkdirSync(dir);
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
