/**
 * `affitrack backup <file>`: a consistent copy of the SQLite database, safe while the server
 * runs. The database is in WAL mode: recent commits sit in `affitrack.db-wal` until a
 * checkpoint moves them into `affitrack.db`, so a copy of `affitrack.db` alone opened fine and
 * passed `integrity_check` yet lacked acknowledged writes (292 of 317 conversions in one
 * test). SQLite's online backup reads through a connection, which sees the WAL's commits, and
 * copies one snapshot of the whole database into a single file.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CommandError } from '../cliErrors.js';
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
  } finally {
    database.close();
  }
}
