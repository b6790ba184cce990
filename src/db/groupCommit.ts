/**
 * Group commit for SQLite. A durable SQLite commit costs one fsync, which caps a writer at
 * a few thousand commits a second. Units of work that arrive while a batch is being written
 * are queued and then run together in one transaction, each inside its own SAVEPOINT so a
 * failing unit rolls back alone; one fsync then commits the whole batch. Every caller's
 * promise settles only after that fsync, so an acknowledged write is always on disk. The
 * fsync runs off the event loop (walSync.ts): requests go on being served meanwhile.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { runPreparedDirectly } from './prepared.js';
import type { Schema } from './schema.js';
import type { TransactWork } from './types.js';
import type { WalSync } from './walSync.js';

/** Upper bound on units per batch, so one batch cannot hold the writer for long. */
const MAX_BATCH = 512;

interface Unit {
  work: TransactWork<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class GroupCommitter {
  private queue: Unit[] = [];
  private flushing: Promise<void> | null = null;
  /** Told each batch's size (the metrics' histogram); unset unless metrics are on. */
  onBatch: ((size: number) => void) | null = null;
  // Run around every unit of every batch, straight on the writer connection the batch's
  // transaction holds (SQLite runs them in microseconds; Kysely's round trip costs more).
  private readonly savepoint: SQLite.Statement;
  private readonly release: SQLite.Statement;
  private readonly rollbackTo: SQLite.Statement;

  /** `writer` is the better-sqlite3 connection under `db`; `wal` makes its commits durable. */
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly writer: SQLite.Database,
    private readonly wal: WalSync,
  ) {
    this.savepoint = writer.prepare('SAVEPOINT unit');
    this.release = writer.prepare('RELEASE SAVEPOINT unit');
    this.rollbackTo = writer.prepare('ROLLBACK TO SAVEPOINT unit');
  }

  run<T>(work: TransactWork<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  /** Resolves when everything queued so far is committed. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flushLoop(): Promise<void> {
    // Yield once so requests arriving in the same tick join the first batch.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        await this.commitBatch(batch);
      }
    } finally {
      this.flushing = null;
    }
  }

  private async commitBatch(batch: Unit[]): Promise<void> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    this.onBatch?.(batch.length);
    try {
      await this.wal.commit(() =>
        this.db.transaction().execute(async (trx) => {
          runPreparedDirectly(trx, this.writer);
          for (const unit of batch) {
            this.savepoint.run();
            try {
              const value = await unit.work(trx);
              this.release.run();
              outcomes.push({ ok: true, value });
            } catch (error) {
              // SQLite rolled the whole transaction back itself (SQLITE_FULL, SQLITE_IOERR…):
              // the batch's earlier units went with it, and there is no savepoint left to
              // return to. The batch fails with the unit's error, not with "no such savepoint".
              if (!this.writer.inTransaction) throw error;
              this.rollbackTo.run();
              this.release.run();
              outcomes.push({ ok: false, error });
            }
          }
        }),
      );
    } catch (error) {
      // The commit or its fsync failed: nothing in the batch is known to be durable.
      for (const unit of batch) unit.reject(error);
      return;
    }
    batch.forEach((unit, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) unit.resolve(outcome.value);
      else unit.reject(outcome?.error);
    });
  }
}
