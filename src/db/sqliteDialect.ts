/**
 * Kysely's SQLite dialect, adapted to how Affitrack uses SQLite.
 *
 * Both connections compile LIMIT and OFFSET numbers into the SQL text instead of binding
 * them. SQLite (3.47 and later) plans with a bound LIMIT's value and marks the statement to
 * be prepared again whenever that parameter is bound, which better-sqlite3 does on every
 * run: the tracking link's velocity count (`limit 5`) cost 13 µs instead of 3, nearly all of
 * it re-preparing. As text, every page size is its own statement, prepared once and cached
 * (database.ts keeps a few hundred per connection).
 *
 * The writer's dialect is made for a file shared by several processes (the server and a CLI
 * command, or two servers starting together):
 * - write transactions begin IMMEDIATE, taking the write lock up front, so a transaction
 *   waits for another process instead of failing when it first writes. It waits between
 *   tries, not in SQLite's busy handler (the writer's busy_timeout is 0, database.ts): that
 *   one sleeps on the event loop's thread, and while a CLI command held the lock every
 *   request of the server, reads and redirects too, stood still for up to 5 s;
 * - migrations run inside such a transaction (SQLite does support transactional DDL), so a
 *   second process migrating at the same time waits and then finds nothing left to do.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type LimitNode,
  type OffsetNode,
  type OperationNode,
  type QueryCompiler,
  SqliteAdapter,
  SqliteDialect,
  SqliteQueryCompiler,
  ValueNode,
} from 'kysely';

class LiteralLimitCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    if (!this.appendInteger('limit ', node.limit)) super.visitLimit(node);
  }

  protected override visitOffset(node: OffsetNode): void {
    if (!this.appendInteger('offset ', node.offset)) super.visitOffset(node);
  }

  /** Appends `keyword` and the value when `node` is a plain integer value; false otherwise. */
  private appendInteger(keyword: string, node: OperationNode): boolean {
    if (!ValueNode.is(node) || !Number.isSafeInteger(node.value)) return false;
    this.append(`${keyword}${node.value as number}`);
    return true;
  }
}

/** The reader's dialect: integer LIMIT and OFFSET compiled as text. */
export class LiteralLimitSqliteDialect extends SqliteDialect {
  constructor(database: SQLite.Database) {
    super({ database });
  }

  override createQueryCompiler(): QueryCompiler {
    return new LiteralLimitCompiler();
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** How long a write transaction waits for another process's write lock before failing with SQLITE_BUSY. */
export const SQLITE_LOCK_WAIT_MS = 5000;
/** The longest pause between two tries (they start at 1 ms and double). */
const LOCK_RETRY_MAX_MS = 25;
const BEGIN = CompiledQuery.raw('begin immediate');

export class SharedFileSqliteDialect extends LiteralLimitSqliteDialect {
  constructor(private readonly writer: SQLite.Database) {
    super(writer);
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const rollback = driver.rollbackTransaction.bind(driver);
    driver.rollbackTransaction = async (connection: DatabaseConnection) => {
      // SQLite ends the whole transaction itself on some errors (SQLITE_FULL, SQLITE_IOERR,
      // SQLITE_NOMEM). A ROLLBACK then fails with "cannot rollback - no transaction is
      // active", and Kysely would throw that instead of the error that mattered: a full disk
      // was logged only as a failed rollback.
      if (this.writer.inTransaction) await rollback(connection);
    };
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      const giveUpAt = Date.now() + SQLITE_LOCK_WAIT_MS;
      for (let pause = 1; ; pause = Math.min(2 * pause, LOCK_RETRY_MAX_MS)) {
        try {
          await connection.executeQuery(BEGIN);
          return;
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= giveUpAt) throw error;
        }
        await sleep(pause);
      }
    };
    return driver;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}
