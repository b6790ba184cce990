/**
 * Kysely's SQLite dialect with two changes for a file shared by several processes (the
 * server and a CLI command, or two servers starting together):
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
  SqliteAdapter,
  SqliteDialect,
} from 'kysely';

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

export class SharedFileSqliteDialect extends SqliteDialect {
  constructor(database: SQLite.Database) {
    super({ database });
  }

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
