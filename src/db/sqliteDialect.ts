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
 *   waits (busy_timeout) for another process instead of failing when it first writes;
 * - migrations run inside such a transaction (SQLite does support transactional DDL), so a
 *   second process migrating at the same time waits and then finds nothing left to do.
 */
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

export class SharedFileSqliteDialect extends LiteralLimitSqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return driver;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}
