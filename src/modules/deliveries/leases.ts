/**
 * Whether the dispatcher's leases are still its own, and giving back the ones it will not use.
 * What waits in its lanes (lanes.ts) is sent on the strength of leases that last only while
 * the heartbeat does: a process that stalls for longer than the take-over threshold may have
 * lost them to another worker. So nothing starts while the heartbeat is in doubt (held), and
 * a stall found drops what waited and hands it back to be claimed again — by this worker if
 * the leases were still its own. Checking costs one clock read; no query in normal running.
 * The rows are written by heartbeat.ts and handBack.ts.
 */
import type { AppContext } from '../../context.js';
import { timeOfId } from '../../ids.js';
import { handBackLeases } from './handBack.js';
import { forgetDeadWorkers, HEARTBEAT_MS, LEASES_IN_DOUBT_AFTER_MS, recordHeartbeat } from './heartbeat.js';

/** Beats between two sweeps of long-dead workers' rows. */
const SWEEP_EVERY_BEATS = 600;

/** What the leases ask of the dispatcher that holds them. */
export interface LeaseHooks {
  /** Takes every delivery not yet started out of the lanes; returns their ids. */
  takeWaiting(): string[];
  /** Leases were handed back (or failed to be): the claim loop may look for them again. */
  wake(): void;
}

export class Leases {
  /** Leases being handed back (handBack); runOnce and stopping wait for them. */
  private readonly handingBack = new Set<Promise<void>>();
  /**
   * Deliveries whose hand-back failed — a stall is often the database being away, which stops
   * the heartbeat too: handed back after the next beat that is written, or their leases would
   * keep them (this worker's claims skip its own leases) until they expire.
   */
  private readonly unreturned: string[] = [];
  /** When this dispatcher's heartbeat was last written (claims skip the write while it is fresh). */
  private lastBeatAt = Number.NEGATIVE_INFINITY;
  /** When a stall was last found (held): leases taken at fan-out before it are in doubt. */
  private leasesDoubtedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ctx: AppContext,
    private readonly owner: string,
    private readonly hooks: LeaseHooks,
  ) {}

  /** Writes the first heartbeat (failing or not), then one every HEARTBEAT_MS until stopped. */
  async startHeartbeat(): Promise<() => void> {
    let beats = 0;
    let failing = false;
    const beat = async () => {
      const now = this.ctx.clock.now();
      try {
        // Aside from the pool: a beat queued behind a burst of requests would reach the
        // database seconds late, and other workers would take a busy worker for a dead one
        // and send again what it had already sent.
        await this.ctx.db.transactAside(async (trx) => {
          await recordHeartbeat(trx, this.owner, now);
          if (++beats % SWEEP_EVERY_BEATS === 0) await forgetDeadWorkers(trx, now);
        });
        this.noteBeat(now);
        failing = false;
      } catch (error) {
        if (!failing) this.ctx.logger.error({ err: error }, 'could not record the dispatcher heartbeat');
        failing = true;
      }
    };
    await beat();
    const timer = setInterval(() => void beat(), HEARTBEAT_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Whether a claim at `now` should write the heartbeat too: the last one written is a beat old. */
  beatDue(now: number): boolean {
    return now - this.lastBeatAt >= HEARTBEAT_MS;
  }

  /** A heartbeat written at `at` has committed: a silence before it that was too long voids what waits. */
  noteBeat(at: number): void {
    this.held();
    this.lastBeatAt = Math.max(this.lastBeatAt, at);
    if (this.unreturned.length > 0) void this.handBack(this.unreturned.splice(0));
  }

  /**
   * Whether the leases of this dispatcher's deliveries are surely still its own: its last
   * heartbeat is recent enough that no other worker can have taken them over (heartbeat.ts,
   * LEASES_IN_DOUBT_AFTER_MS). Not so after a stall (the event loop blocked, the process
   * frozen): everything not yet started is then dropped from the lanes and handed back, to be
   * claimed again by whoever may — this worker too, once it beats again. Sends in flight at
   * the stall cannot be called back; their late outcomes are fenced off in completion.ts.
   */
  held(): boolean {
    const now = this.ctx.clock.now();
    if (now - this.lastBeatAt < LEASES_IN_DOUBT_AFTER_MS) return true;
    // Before its first heartbeat a dispatcher has no lease to doubt: it only takes none.
    if (this.lastBeatAt === Number.NEGATIVE_INFINITY) return false;
    this.leasesDoubtedAt = now;
    const stale = this.hooks.takeWaiting();
    if (stale.length > 0) {
      this.ctx.logger.warn(
        { silentMs: now - this.lastBeatAt, deliveries: stale.length },
        'this worker was silent long enough to lose its leases; handing back what it had not sent',
      );
      void this.handBack(stale);
    }
    return false;
  }

  /** Whether a delivery was made (its id carries the time) before the last stall found. */
  inDoubt(deliveryId: string): boolean {
    return (
      this.leasesDoubtedAt > Number.NEGATIVE_INFINITY &&
      (timeOfId(deliveryId) ?? Number.NEGATIVE_INFINITY) < this.leasesDoubtedAt
    );
  }

  /** Gives up leases not used (handBack.ts); the claim loop then looks for them again. */
  handBack(ids: string[]): Promise<void> {
    const task: Promise<void> = this.ctx.db
      .transact((trx) => handBackLeases(trx, this.owner, ids))
      .catch((error) => {
        this.ctx.logger.error({ err: error }, 'could not hand back waiting deliveries');
        this.unreturned.push(...ids);
      })
      .finally(() => {
        this.handingBack.delete(task);
        this.hooks.wake();
      });
    this.handingBack.add(task);
    return task;
  }

  /** Hand-backs under way. */
  pending(): Promise<void>[] {
    return [...this.handingBack];
  }

  /** Waits for the hand-backs under way. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.handingBack]);
  }
}
