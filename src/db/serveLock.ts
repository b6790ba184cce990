/**
 * One server per SQLite DATA_DIR. On SQLite the service counts rate limits in its memory and
 * takes every unfinished idempotency claim it finds at start-up for a crashed process's: both
 * rest on one process answering with the database. A second `serve` on the same files started
 * without a word, doubled every limit and released the first one's claims. A serving process
 * now holds an exclusive SQLite lock on a file of its own for its lifetime, which the system
 * drops when the process ends (kill -9 included); a second one is refused. CLI commands beside
 * the server do not take it; they only look whether it is held before migrating (cli.ts).
 */
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CommandError, EXIT_FAILURE } from '../cliErrors.js';

export const SERVE_LOCK_FILE = 'affitrack.serve-lock';

/** Takes the DATA_DIR's serve lock; returns what releases it. */
export function holdServeLock(dataDir: string): () => void {
  // No busy wait: a lock that is held stays held.
  const lock = new SQLite(path.join(dataDir, SERVE_LOCK_FILE), { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') throw error;
    throw new CommandError(
      'data_dir_in_use',
      `another affitrack server is running on the SQLite database in ${dataDir} (DATA_DIR): ` +
        'stop it, or give this one its own DATA_DIR',
      EXIT_FAILURE,
    );
  }
  return () => lock.close();
}

/**
 * Whether a server holds the DATA_DIR's serve lock. Found by taking it for a moment, so call
 * it only where it matters: a server starting in that moment would be refused.
 */
export function serverHoldsLock(dataDir: string): boolean {
  try {
    holdServeLock(dataDir)();
    return false;
  } catch (error) {
    if (error instanceof CommandError && error.code === 'data_dir_in_use') return true;
    throw error;
  }
}
