/**
 * `affitrack backup <file>`: a consistent copy of the SQLite database, safe while the server
 * runs. The database is in WAL mode: recent commits sit in `affitrack.db-wal` until a
 * checkpoint moves them into `affitrack.db`, so a copy of `affitrack.db` alone opened fine and
 * passed `integrity_check` yet lacked acknowledged writes (292 of 317 conversions in one
 * test). SQLite's online backup reads through a connection, which sees the WAL's commits, and
 * copies one snapshot of the whole database into a single file.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, linkSync, openSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CommandError, EXIT_FAILURE } from '../cliErrors.js';
import { SQLITE_FILE } from './database.js';

/** Files SQLite may create beside a database it writes: all go with a failed copy. */
const SIDE_FILES = ['', '-journal', '-wal', '-shm'];

/**
 * Copies the database in `dataDir` to `target`, a new file; returns the pages copied.
 *
 * The copy is written to a temporary file beside the target (same directory, so same file
 * system) and put in place only once complete: a backup that fails (disk full, the process
 * killed, the machine down) never leaves a partial file at the target path, where it would
 * pass for a backup. A failed copy's temporary file is removed; one left by a killed process
 * is named `.<target>.partial-…`, which no one takes for a backup.
 */
export async function backupSqlite(dataDir: string, target: string): Promise<number> {
  const source = path.join(dataDir, SQLITE_FILE);
  if (!existsSync(source)) {
    throw new CommandError('not_found', `there is no database to back up in ${dataDir} (DATA_DIR)`);
  }
  refuseExisting(target);
  const directory = path.dirname(target);
  if (!existsSync(directory) || !statSync(directory).isDirectory()) {
    // The FILE cannot be written where it was named: exit 1 backup_failed, as README's table
    // has it for every FILE that cannot be written, not a usage error.
    throw new CommandError(
      'backup_failed',
      `cannot write the backup to ${target} (the FILE of affitrack backup FILE): ${directory} is not a directory`,
      EXIT_FAILURE,
    );
  }
  const partial = path.join(directory, `.${path.basename(target)}.partial-${randomBytes(6).toString('hex')}`);
  // Read-only: a backup changes nothing in DATA_DIR, and creates no database where none was.
  const database = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    const { totalPages } = await database.backup(partial);
    putInPlace(partial, target);
    return totalPages;
  } catch (error) {
    removePartial(partial);
    throw error instanceof CommandError ? error : targetError(error, target, partial);
  } finally {
    database.close();
  }
}

/** A backup never replaces a file: the one it would replace may be the only good copy. */
function refuseExisting(target: string): void {
  if (!existsSync(target)) return;
  const what = statSync(target).isDirectory() ? 'is a directory' : 'already exists';
  throw new CommandError('conflict', `${target} ${what}: name a new file`);
}

/**
 * Gives the complete copy its name without replacing anything: a hard link fails if the
 * target appeared meanwhile (rename would overwrite it). A file system without hard links
 * (some network and FAT mounts) gets a rename after one more check.
 */
function putInPlace(partial: string, target: string): void {
  try {
    linkSync(partial, target);
    unlinkSync(partial);
    return;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EEXIST') refuseExisting(target);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
  }
  refuseExisting(target);
  renameSync(partial, target);
}

function removePartial(partial: string): void {
  for (const suffix of SIDE_FILES) rmSync(`${partial}${suffix}`, { force: true });
}

/**
 * SQLite cannot open or write the copy, or the file system refuses to name it: say so naming
 * the target (SQLITE_CANTOPEN otherwise reached cliErrors as a DATA_DIR problem and sent the
 * operator to a healthy data directory). SQLite does not say why; creating a file in the
 * target's directory ourselves does (EACCES, EROFS…). The probe uses the temporary name, never
 * the target's: nothing but a complete backup ever appears there.
 */
function targetError(error: unknown, target: string, partial: string): unknown {
  const code = String((error as { code?: unknown }).code ?? '');
  const reason = SYSTEM_REASONS[code] ?? (/^SQLITE_(CANTOPEN|READONLY|PERM|FULL|IOERR)/.test(code) ? null : undefined);
  if (reason === undefined) return error;
  return new CommandError(
    'backup_failed',
    `cannot write the backup to ${target} (the FILE of affitrack backup FILE): ${reason ?? whyNotWritable(partial, error)}`,
    EXIT_FAILURE,
  );
}

function whyNotWritable(probe: string, error: unknown): string {
  const code = String((error as { code?: unknown }).code ?? '');
  const message = String((error as { message?: unknown }).message ?? 'cannot write it');
  // A write refused mid-way (EFBIG, EIO) reaches SQLite as a bare I/O error, most often a full disk.
  const sqliteReason = code.startsWith('SQLITE_IOERR') ? `${message} (is the disk full?)` : message;
  try {
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
    return sqliteReason;
  } catch (failure) {
    const errno = String((failure as { code?: unknown }).code ?? '');
    return SYSTEM_REASONS[errno] ?? `${sqliteReason} (${errno || 'unknown error'})`;
  }
}

const SYSTEM_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'the file is too large for this file system or process limit',
  EIO: 'input/output error',
};
