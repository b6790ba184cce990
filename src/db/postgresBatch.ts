/**
 * Group commit for PostgreSQL's hot writes (clicks, conversions). Each commit waits for a
 * WAL flush, and each statement costs both processes a round trip — on this stack a socket
 * write costs more than the SQL it carries. Writes that arrive together are therefore
 * stored together: one statement (a data-modifying WITH, which commits on its own) per
 * batch. A few batches may be in flight at once; while they are, new writes queue for the
 * next, so batches grow with the load and a lone write waits for nothing but its turn of
 * the event loop.
 */

interface Pending<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (error: unknown) => void;
}

export interface BatchLimits {
  /** Items per statement at most. */
  maxBatch: number;
  /** Statements in flight at once (each holds a pooled connection until its commit). */
  maxInFlight: number;
}

export class StatementBatcher<I, O> {
  private queue: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  /**
   * `store` writes a batch in one statement and answers with one outcome per item, in the
   * items' order; if it throws, every item of the batch fails with its error.
   */
  constructor(
    private readonly store: (items: I[]) => Promise<O[]>,
    private readonly limits: BatchLimits,
  ) {}

  /** Resolves with the item's outcome once its batch is committed. */
  add(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.limits.maxInFlight) return;
    this.scheduled = true;
    // Writes arriving in the same turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.inFlight < this.limits.maxInFlight) {
        void this.send(this.queue.splice(0, this.limits.maxBatch));
      }
    });
  }

  private async send(batch: Array<Pending<I, O>>): Promise<void> {
    this.inFlight += 1;
    try {
      const outcomes = await this.store(batch.map((pending) => pending.item));
      if (outcomes.length !== batch.length) throw new Error('a batch statement answered for the wrong number of items');
      for (const [i, pending] of batch.entries()) pending.resolve(outcomes[i] as O);
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    } finally {
      this.inFlight -= 1;
      if (this.queue.length > 0) this.schedule();
    }
  }
}
