/**
 * Notices when this process commits a change to data the hot paths cache (API keys,
 * brands, offers, partners, blocklists), so those caches can drop what they hold at once.
 *
 * It sits under Kysely, at the connection: every statement's SQL passes by, whether built,
 * prepared or raw, on either database. A write to a watched table marks its transaction;
 * when that transaction commits, the epoch moves on. A cache entry remembers the epoch it
 * was read under and is not served once the epoch has moved (see cache.ts). Entries read
 * while the change was still uncommitted are thereby dropped too: they carry the old epoch.
 */
import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';

/** Tables whose rows the hot paths keep in memory. */
export const CACHED_TABLES = ['api_keys', 'brands', 'offers', 'partners', 'fraud_blocklist'] as const;

const WRITE_TO_CACHED_TABLE = new RegExp(
  `^\\s*(?:insert\\s+into|update|delete\\s+from|replace\\s+into)\\s+(?:"?\\w+"?\\s*\\.\\s*)?"?(?:${CACHED_TABLES.join('|')})"?[\\s(]`,
  'i',
);

/** Statements are few and repeat, so each SQL text is classified once. */
const classified = new Map<string, boolean>();
const MAX_CLASSIFIED = 2000;

export function writesCachedTable(sql: string): boolean {
  let writes = classified.get(sql);
  if (writes === undefined) {
    writes = WRITE_TO_CACHED_TABLE.test(sql);
    if (classified.size >= MAX_CLASSIFIED) classified.clear();
    classified.set(sql, writes);
  }
  return writes;
}

/** A counter that moves on whenever cached data may have changed. */
export class ChangeEpoch {
  private current = 0;

  get value(): number {
    return this.current;
  }

  bump(): void {
    this.current += 1;
  }
}

class WatchedConnection implements DatabaseConnection {
  /** Inside a transaction that wrote to a watched table. */
  dirty = false;
  inTransaction = false;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly epoch: ChangeEpoch,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const writes = writesCachedTable(query.sql);
    if (writes && this.inTransaction) this.dirty = true;
    const result = await this.inner.executeQuery<R>(query);
    if (writes && !this.inTransaction) this.epoch.bump();
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

class WatchingDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, WatchedConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly epoch: ChangeEpoch,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let watched = this.wrapped.get(connection);
    if (!watched) {
      watched = new WatchedConnection(connection, this.epoch);
      this.wrapped.set(connection, watched);
    }
    return watched;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const watched = connection as WatchedConnection;
    await this.inner.beginTransaction(watched.inner, settings);
    watched.inTransaction = true;
    watched.dirty = false;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const watched = connection as WatchedConnection;
    try {
      await this.inner.commitTransaction(watched.inner);
    } finally {
      // Also after a failed COMMIT: whether it took effect is unknown, so assume it did.
      if (watched.dirty) this.epoch.bump();
      watched.inTransaction = false;
      watched.dirty = false;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const watched = connection as WatchedConnection;
    try {
      await this.inner.rollbackTransaction(watched.inner);
    } finally {
      watched.inTransaction = false;
      watched.dirty = false;
    }
  }

  async savepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.inner.savepoint?.((connection as WatchedConnection).inner, name, compileQuery);
  }

  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.inner.rollbackToSavepoint?.((connection as WatchedConnection).inner, name, compileQuery);
  }

  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.inner.releaseSavepoint?.((connection as WatchedConnection).inner, name, compileQuery);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as WatchedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** `dialect` with every committed write to a cached table moving `epoch` on. */
export function watchingChanges(dialect: Dialect, epoch: ChangeEpoch): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new WatchingDriver(dialect.createDriver(), epoch),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}
