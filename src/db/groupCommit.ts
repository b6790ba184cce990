/**
 * Group commit for SQLite. A durable SQLite commit costs one fsync, which caps a writer at
 * a few thousand commits a second. Units of work that arrive while a batch is being written
 * are queued and then run together in one transaction, each inside its own SAVEPOINT so a
 * failing unit rolls back alone; one fsync then commits the whole batch. Every caller's
 * promise settles only after that commit, so an acknowledged write is always on disk.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { TransactWork, Trx } from './types.js';

// Compiled once: they run around every unit of every batch.
const SAVEPOINT = CompiledQuery.raw('SAVEPOINT unit');
const RELEASE = CompiledQuery.raw('RELEASE SAVEPOINT unit');
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO SAVEPOINT unit');

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

  constructor(private readonly db: Kysely<Schema>) {}

  run<T>(work: TransactWork<T>, onCommitted: (trx: Trx) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushing) this.flushing = this.flushLoop(onCommitted);
    });
  }

  /** Resolves when everything queued so far is committed. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flushLoop(onCommitted: (trx: Trx) => void): Promise<void> {
    // Yield once so requests arriving in the same tick join the first batch.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        await this.commitBatch(batch, onCommitted);
      }
    } finally {
      this.flushing = null;
    }
  }

  private async commitBatch(batch: Unit[], onCommitted: (trx: Trx) => void): Promise<void> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let batchTrx: Trx | null = null;
    try {
      await this.db.transaction().execute(async (trx) => {
        batchTrx = trx;
        for (const unit of batch) {
          await trx.executeQuery(SAVEPOINT);
          try {
            const value = await unit.work(trx);
            await trx.executeQuery(RELEASE);
            outcomes.push({ ok: true, value });
          } catch (error) {
            await trx.executeQuery(ROLLBACK_TO);
            await trx.executeQuery(RELEASE);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // The commit itself failed: nothing in the batch is durable.
      for (const unit of batch) unit.reject(error);
      return;
    }
    if (batchTrx) onCommitted(batchTrx);
    batch.forEach((unit, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) unit.resolve(outcome.value);
      else unit.reject(outcome?.error);
    });
  }
}
