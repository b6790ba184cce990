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
 *
 * Keeping the WAL small. SQLite starts the WAL again from its beginning only when a writer
 * begins while every frame is copied back and no reader is on one. Under steady load that
 * never happened: a PASSIVE checkpoint stops at the pinned reader's snapshot and the next
 * batch is already writing, so the file grew by every commit (944 MB for a 43 MB database
 * after a minute at 300 conversions/s) and kept that size while idle. So the WAL is
 * *truncated* — a TRUNCATE checkpoint on the worker copies the rest back, syncs the database
 * file, and empties the WAL — whenever it passes `limits.restartBytes`, and when writes pause
 * (at most PAUSED_COMMITS in `limits.pauseMs`: a server's own background work commits a few
 * times a second, so "no commit at all" never comes). The first of these runs between two batches: `commit()` holds the next
 * batch (its units queue up and join it) until the checkpoint returns, so neither the
 * writer nor the pinned reader is in its way; a PASSIVE checkpoint started when the limit is
 * passed has by then copied most of the WAL, unheld.
 */
import { fstatSync } from 'node:fs';
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

/** When the WAL is emptied (see the header); tests lower them. */
export interface WalLimits {
  /**
   * A WAL this large is truncated before the next batch. 64 MiB: at ~40 KB of WAL per
   * conversion that is a truncation every few seconds at 300/s, each holding one batch for
   * the few milliseconds of a short checkpoint, and a size no disk notices.
   */
  restartBytes: number;
  /** The WAL is truncated after a period this long with writes paused, so an idle server keeps none. */
  pauseMs: number;
}

export const DEFAULT_WAL_LIMITS: WalLimits = { restartBytes: 64 * 1024 * 1024, pauseMs: 1000 };

/**
 * Commits in a `pauseMs` period that still count as a pause: an idle server's background
 * work (the analytics fold, delivery heartbeats) commits a few times a second; a loaded one
 * commits hundreds of times, and there the size limit decides.
 */
const PAUSED_COMMITS = 10;

/**
 * How long a TRUNCATE checkpoint waits (on the worker) for another process's lock — a CLI
 * command's write or read — before it gives up and copies what it can, as PASSIVE would.
 * It bounds how long a held batch can wait; this process's own reads never take that long.
 */
const TRUNCATE_BUSY_TIMEOUT_MS = 200;

/** A PASSIVE checkpoint waits for no reader or writer; this covers the rest (a WAL index being rebuilt). */
const PASSIVE_BUSY_TIMEOUT_MS = 5000;

/** After a TRUNCATE that another process's lock kept from emptying the WAL, the pause before the next try. */
const TRUNCATE_RETRY_MS = 1000;

type CheckpointMode = 'PASSIVE' | 'TRUNCATE';

/** `PRAGMA wal_checkpoint`'s row; null when the checkpoint failed or the checkpointer is gone. */
interface CheckpointResult {
  /** 1 when a lock kept a TRUNCATE from emptying the WAL. */
  busy: number;
}

/**
 * The checkpointer: one connection, checkpoints on request — PASSIVE (never waiting for
 * readers or the writer) or TRUNCATE (waiting up to the given time for them) — at FULL, so
 * the database file is synced before the WAL may restart. Answers every request in order.
 * Plain JavaScript run by `eval`, so it works alike from src/ (tsx) and dist/.
 */
const CHECKPOINTER = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('synchronous = FULL');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('busy_timeout = ' + message.busyTimeoutMs);
    const [result] = db.pragma('wal_checkpoint(' + message.mode + ')');
    parentPort.postMessage(result);
  } catch {
    // An I/O error: the next request tries again.
    parentPort.postMessage(null);
  }
});
`;

/** Makes the WAL's written pages durable. */
export type SyncWal = (wal: FileHandle) => Promise<void>;

const fdatasync: SyncWal = (wal) => wal.datasync();

interface Checkpointer {
  worker: Worker;
  exited: Promise<void>;
  /** Requests sent, answered in order. */
  waiting: Array<(result: CheckpointResult | null) => void>;
  failed: boolean;
}

export class WalSync {
  private wal: Promise<FileHandle> | null = null;
  /** Started at the first checkpoint: a short-lived process (a CLI command) needs none. */
  private checkpointer: Checkpointer | null = null;
  private checkpointing = false;
  private commitsSinceCheckpoint = 0;
  /** The WAL passed `restartBytes`: the next batch waits for a TRUNCATE first. */
  private truncateDue = false;
  /** A TRUNCATE in progress; batches wait for it. */
  private truncating: Promise<void> | null = null;
  private retryTruncateAt = 0;
  private committing = false;
  private pauseTimer: NodeJS.Timeout | null = null;
  private commitsThisPeriod = 0;
  /** The WAL, once opened (sync()), for the pause timer's fstat. */
  private walFile: FileHandle | null = null;
  private closed = false;

  private readonly beginRead: SQLite.Statement;
  private readonly takeSnapshot: SQLite.Statement;
  private readonly endRead: SQLite.Statement;

  /** `writer` and `reader` are the two connections to `file` (database.ts). */
  constructor(
    private readonly writer: SQLite.Database,
    private readonly reader: SQLite.Database,
    private readonly file: string,
    private readonly syncWal: SyncWal = fdatasync,
    private readonly limits: WalLimits = DEFAULT_WAL_LIMITS,
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
    // Between two batches: nothing is pinned and the writer is free, so a TRUNCATE can finish.
    if (this.truncateDue && !this.checkpointing) this.truncating ??= this.truncate();
    while (this.truncating) await this.truncating;
    this.committing = true;
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
      this.committing = false;
    }
  }

  /** Resolves once everything the writer committed so far is on disk. */
  async sync(): Promise<void> {
    // The WAL exists from the first commit on, and SQLite keeps it (same file) while the
    // writer is open; a TRUNCATE empties it in place. A failed open is tried again at the next sync.
    this.wal ??= open(`${this.file}-wal`, 'r+').catch((error: unknown) => {
      this.wal = null;
      throw error;
    });
    const wal = await this.wal;
    this.walFile = wal;
    await this.syncWal(wal);
    this.countCommit(wal);
  }

  /**
   * Asks the checkpointer to copy the WAL into the database every CHECKPOINT_EVERY_COMMITS
   * and when it passes `restartBytes` (then to truncate it before the next batch), and to
   * truncate it once writes pause.
   */
  private countCommit(wal: FileHandle): void {
    if (this.closed) return;
    this.commitsSinceCheckpoint += 1;
    this.commitsThisPeriod += 1;
    this.pauseTimer ??= this.startPauseTimer();
    // An fstat of an open file: a microsecond, no disk access.
    const passedLimit =
      !this.truncateDue && fstatSync(wal.fd).size >= this.limits.restartBytes && Date.now() >= this.retryTruncateAt;
    if (passedLimit) this.truncateDue = true;
    if (this.checkpointing || (this.commitsSinceCheckpoint < CHECKPOINT_EVERY_COMMITS && !passedLimit)) return;
    this.commitsSinceCheckpoint = 0;
    this.checkpointing = true;
    void this.checkpoint('PASSIVE', PASSIVE_BUSY_TIMEOUT_MS).then(() => {
      this.checkpointing = false;
    });
  }

  /** Truncates the WAL when a period passes with at most PAUSED_COMMITS. */
  private startPauseTimer(): NodeJS.Timeout {
    const timer = setInterval(() => {
      const paused = this.commitsThisPeriod <= PAUSED_COMMITS;
      this.commitsThisPeriod = 0;
      if (!paused || this.closed || this.committing || this.truncating || !this.walFile) return;
      if (fstatSync(this.walFile.fd).size === 0) return;
      this.truncating = this.truncate();
    }, this.limits.pauseMs);
    // Keeps no process alive (a CLI command exits at once).
    timer.unref();
    return timer;
  }

  /** Copies the whole WAL into the database file and empties it; batches wait meanwhile. */
  private async truncate(): Promise<void> {
    this.truncateDue = false;
    try {
      const result = await this.checkpoint('TRUNCATE', TRUNCATE_BUSY_TIMEOUT_MS);
      // Another process held a lock: the WAL stays for now; do not hold every batch for it.
      if (!result || result.busy) this.retryTruncateAt = Date.now() + TRUNCATE_RETRY_MS;
      else this.commitsSinceCheckpoint = 0;
    } finally {
      this.truncating = null;
    }
  }

  private checkpoint(mode: CheckpointMode, busyTimeoutMs: number): Promise<CheckpointResult | null> {
    this.checkpointer ??= this.startCheckpointer();
    const checkpointer = this.checkpointer;
    if (checkpointer.failed) return Promise.resolve(null);
    return new Promise((resolve) => {
      // Referenced while it owes an answer: a batch held for a TRUNCATE may be all the
      // process is waiting for, and an unreferenced worker would let the event loop end.
      if (checkpointer.waiting.length === 0) checkpointer.worker.ref();
      checkpointer.waiting.push(resolve);
      checkpointer.worker.postMessage({ mode, busyTimeoutMs });
    });
  }

  private startCheckpointer(): Checkpointer {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(CHECKPOINTER, { eval: true, workerData: { driver, file: this.file } });
    const checkpointer: Checkpointer = {
      worker,
      exited: new Promise<void>((resolve) => worker.once('exit', () => resolve())),
      waiting: [],
      failed: false,
    };
    const answerAll = () => {
      for (const resolve of checkpointer.waiting.splice(0)) resolve(null);
    };
    worker.on('message', (result: CheckpointResult | null) => {
      checkpointer.waiting.shift()?.(result);
      if (checkpointer.waiting.length === 0) worker.unref();
    });
    // A checkpointer that cannot run (its connection would not open): SQLite syncs and
    // checkpoints on the writer itself again, on the event loop, as it did before.
    worker.on('error', () => {
      checkpointer.failed = true;
      answerAll();
      this.writer.pragma('synchronous = FULL');
      this.writer.pragma('wal_autocheckpoint = 1000');
    });
    // No request waits for an answer that will not come (a batch held for a TRUNCATE).
    void checkpointer.exited.then(answerAll);
    // After the listeners, which would ref its port again: an idle checkpointer keeps no
    // process alive. (checkpoint() refs it until it has answered.)
    worker.unref();
    return checkpointer;
  }

  /**
   * Stops the checkpointer and gives the writer back SQLite's own durability, so its last
   * checkpoint (at close) syncs the database file before the WAL goes.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pauseTimer) clearInterval(this.pauseTimer);
    while (this.truncating) await this.truncating;
    if (this.checkpointer) {
      // Kept unreferenced while it waits for work; closing is work to wait for.
      this.checkpointer.worker.ref();
      this.checkpointer.worker.postMessage('close');
      await this.checkpointer.exited;
      this.checkpointer = null;
    }
    const wal = this.wal;
    this.wal = null;
    this.walFile = null;
    await (await wal?.catch(() => null))?.close();
    this.writer.pragma('synchronous = FULL');
  }
}
