/**
 * `affitrack backup <file>`: a consistent copy of the SQLite database, safe while the server
 * runs. The database is in WAL mode: recent commits sit in `affitrack.db-wal` until a
 * checkpoint moves them into `affitrack.db`, so a copy of `affitrack.db` alone opened fine and
 * passed `integrity_check` yet lacked acknowledged writes (292 of 317 conversions in one
 * test). SQLite's online backup reads through a connection, which sees the WAL's commits, and
 * copies one snapshot of the whole database into a single file.
 */
import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CommandError, EXIT_FAILURE } from '../cliErrors.js';
import { SQLITE_FILE } from './database.js';

/** Copies the database in `dataDir` to `target`, a new file; returns the pages copied. */
export async function backupSqlite(dataDir: string, target: string): Promise<number> {
  const source = path.join(dataDir, SQLITE_FILE);
  if (!existsSync(source)) {
    throw new CommandError('not_found', `there is no database to back up in ${dataDir} (DATA_DIR)`);
  }
  // A backup never replaces a file: the one it would replace may be the only good copy.
  if (existsSync(target)) throw new CommandError('conflict', `${target} already exists: name a new file`);
  const directory = path.dirname(target);
  if (!existsSync(directory) || !statSync(directory).isDirectory()) {
    throw new CommandError('not_found', `cannot write ${target}: ${directory} is not a directory`);
  }
  // Read-only: a backup changes nothing in DATA_DIR, and creates no database where none was.
  const database = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    const { totalPages } = await database.backup(target);
    return totalPages;
  } catch (error) {
    throw targetError(error, target);
  } finally {
    database.close();
  }
}

/**
 * SQLite cannot open or write the target: say so naming the target (its SQLITE_CANTOPEN
 * otherwise reached cliErrors as a DATA_DIR problem and sent the operator to a healthy data
 * directory). SQLite does not say why; creating the file ourselves does (EACCES, EROFS…).
 */
function targetError(error: unknown, target: string): unknown {
  const code = String((error as { code?: unknown }).code ?? '');
  if (!/^SQLITE_(CANTOPEN|READONLY|PERM|FULL|IOERR)/.test(code)) return error;
  return new CommandError(
    'backup_failed',
    `cannot write the backup to ${target} (the FILE of affitrack backup FILE): ${whyNotWritable(target, error)}`,
    EXIT_FAILURE,
  );
}

function whyNotWritable(target: string, error: unknown): string {
  const sqliteReason = String((error as { message?: unknown }).message ?? 'cannot write it');
  if (existsSync(target)) return sqliteReason;
  try {
    closeSync(openSync(target, 'wx'));
    unlinkSync(target);
    return sqliteReason;
  } catch (probe) {
    const errno = String((probe as { code?: unknown }).code ?? '');
    return SYSTEM_REASONS[errno] ?? `${sqliteReason} (${errno || 'unknown error'})`;
  }
}

const SYSTEM_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
};
