/**
 * Durability for SQLite's writer without blocking the event loop. With `synchronous = FULL`
 * every commit fsyncs the write-ahead log on the calling thread, and better-sqlite3 runs on
 * the event loop: for the 1–2 ms of each fsync no request is parsed and no webhook sent.
 *
 * Instead the writer commits with `synchronous = OFF` (the pages reach the operating system,
 * which a crash of this process does not lose), and the group committer commits through
 * `commit()`, which then awaits an fdatasync of the WAL file on libuv's thread pool before it
 * returns: an acknowledged write is on disk exactly as with FULL. Until then the reader
 * connection is held on a snapshot taken before the commit, so no request answers with a
 * row that is not yet on disk either (readers see commits when they are durable, as on
 * PostgreSQL). Checkpoints, which copy the WAL into
 * the database file and must fsync that file before the WAL is reused, run on a worker
 * thread with a connection of their own at `synchronous = FULL`: the writer never
 * checkpoints (`wal_autocheckpoint = 0`).
 */
import { type FileHandle, open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/**
 * Commits between two checkpoints. A commit writes a page or more (a batch of clicks a few
 * dozen), so the WAL is copied back at about SQLite's own 1,000-page threshold, and a few
 * small writes stay in it as they would with SQLite's automatic checkpoints.
 */
const CHECKPOINT_EVERY_COMMITS = 100;

/**
 * The checkpointer: one connection, PASSIVE checkpoints on request (never waiting for
 * readers or the writer), FULL so the database file is synced before the WAL may restart.
 * Plain JavaScript run by `eval`, so it works alike from src/ (tsx) and dist/.
 */
const CHECKPOINTER = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = FULL');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // An I/O error: the next request tries again.
  }
  parentPort.postMessage('done');
});
`;

/** Makes the WAL's written pages durable. */
export type SyncWal = (wal: FileHandle) => Promise<void>;

const fdatasync: SyncWal = (wal) => wal.datasync();

export class WalSync {
  private wal: Promise<FileHandle> | null = null;
  /** Started at the first checkpoint: a short-lived process (a CLI command) needs none. */
  private checkpointer: { worker: Worker; exited: Promise<void> } | null = null;
  private checkpointing = false;
  private commitsSinceCheckpoint = 0;

  private readonly beginRead: SQLite.Statement;
  private readonly takeSnapshot: SQLite.Statement;
  private readonly endRead: SQLite.Statement;

  /** `writer` and `reader` are the two connections to `file` (database.ts). */
  constructor(
    private readonly writer: SQLite.Database,
    private readonly reader: SQLite.Database,
    private readonly file: string,
    private readonly syncWal: SyncWal = fdatasync,
  ) {
    this.beginRead = reader.prepare('BEGIN');
    // Any read starts the transaction's snapshot; the schema's first page is always there.
    this.takeSnapshot = reader.prepare('SELECT 1 FROM sqlite_schema LIMIT 1');
    this.endRead = reader.prepare('COMMIT');
    writer.pragma('synchronous = OFF');
    writer.pragma('wal_autocheckpoint = 0');
  }

  /**
   * Runs `write` (one transaction on the writer, committed when it resolves) and resolves
   * once it is on disk; meanwhile the reader sees the database as it was before.
   */
  async commit(write: () => Promise<void>): Promise<void> {
    const pinned = !this.reader.inTransaction;
    if (pinned) {
      this.beginRead.run();
      this.takeSnapshot.get();
    }
    try {
      await write();
      await this.sync();
    } finally {
      if (pinned) this.endRead.run();
    }
  }

  /** Resolves once everything the writer committed so far is on disk. */
  async sync(): Promise<void> {
    // The WAL exists from the first commit on, and SQLite keeps it (same file) while the
    // writer is open. A failed open is tried again at the next sync.
    this.wal ??= open(`${this.file}-wal`, 'r+').catch((error: unknown) => {
      this.wal = null;
      throw error;
    });
    await this.syncWal(await this.wal);
    this.countCommit();
  }

  /** Asks the checkpointer to copy the WAL into the database every CHECKPOINT_EVERY_COMMITS. */
  private countCommit(): void {
    this.commitsSinceCheckpoint += 1;
    if (this.checkpointing || this.commitsSinceCheckpoint < CHECKPOINT_EVERY_COMMITS) return;
    this.commitsSinceCheckpoint = 0;
    this.checkpointing = true;
    this.checkpointer ??= this.startCheckpointer();
    this.checkpointer.worker.postMessage('checkpoint');
  }

  private startCheckpointer(): { worker: Worker; exited: Promise<void> } {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(CHECKPOINTER, { eval: true, workerData: { driver, file: this.file } });
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', () => {
      this.checkpointing = false;
    });
    // A checkpointer that cannot run (its connection would not open): SQLite syncs and
    // checkpoints on the writer itself again, on the event loop, as it did before.
    worker.on('error', () => {
      this.writer.pragma('synchronous = FULL');
      this.writer.pragma('wal_autocheckpoint = 1000');
    });
    // After the listeners, which would ref its port again: an idle checkpointer keeps no process alive.
    worker.unref();
    return { worker, exited };
  }

  /**
   * Stops the checkpointer and gives the writer back SQLite's own durability, so its last
   * checkpoint (at close) syncs the database file before the WAL goes.
   */
  async close(): Promise<void> {
    if (this.checkpointer) {
      // Kept unreferenced while it waits for work; closing is work to wait for.
      this.checkpointer.worker.ref();
      this.checkpointer.worker.postMessage('close');
      await this.checkpointer.exited;
      this.checkpointer = null;
    }
    const wal = this.wal;
    this.wal = null;
    await (await wal?.catch(() => null))?.close();
    this.writer.pragma('synchronous = FULL');
  }
}
