/**
 * The delivery engine's worker: it sends deliveries with bounded concurrency — globally and
 * per target, so a slow or dead receiver only ever ties up its own slots — and records
 * every attempt. It never holds a transaction open during an HTTP call.
 *
 * Work reaches it two ways. New deliveries committed in this process arrive in memory,
 * already leased to it by their creating transaction (fanout.ts), into a lane per target
 * that holds at most two rounds of that target's slots. Everything else — retries coming
 * due, redeliveries, other processes' deliveries, dead workers' leases, what the lanes had
 * no room for — is claimed from the database (claims.ts, in rounds: claimRounds.ts); the
 * claim loop wakes on an in-process signal, on PostgreSQL NOTIFY, when a slot frees, and
 * otherwise polls briefly.
 *
 * This file is the job: the claim loop, fan-out's hand-over, and stopping. Its parts: the
 * lanes and slots (lanes.ts), the leases and heartbeat (leases.ts), the attempt
 * (attempts.ts). What waits in the lanes is sent only while the heartbeat says its leases
 * are still its own.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { FailureLog } from '../../worker/failureLog.js';
import type { Job } from '../../worker/worker.js';
import { Attempts } from './attempts.js';
import { ClaimRounds } from './claimRounds.js';
import { targetKey } from './claims.js';
import { DELIVERY_CHANNEL } from './fanout.js';
import { removeWorker } from './heartbeat.js';
import { Lanes } from './lanes.js';
import { Leases } from './leases.js';
import type { LocalDispatch } from './registry.js';
import { Sender } from './sender.js';
import type { SendableDelivery } from './target.js';

/** Poll for due retries this often when nothing wakes the dispatcher sooner. */
const DEFAULT_POLL_MS = 200;

export interface DispatcherOptions {
  pollMs?: number;
  sender?: Sender;
}

export class Dispatcher implements Job, LocalDispatch {
  readonly name = 'delivery-dispatcher';
  readonly owner = randomUUID();
  private readonly pollMs: number;
  private readonly lanes: Lanes;
  private readonly leases: Leases;
  private readonly attempts: Attempts;
  private readonly rounds: ClaimRounds;
  private woken = false;
  private stopped: Promise<void> | null = null;
  /** run() is looping (not runOnce): claims look ahead for the next due time. */
  private running = false;
  /** When the next delivery comes due, as the last claims saw within their look-ahead. */
  private nextDueAt: number | null = null;
  private wakeUp: (() => void) | null = null;

  constructor(
    private readonly ctx: AppContext,
    options: DispatcherOptions = {},
  ) {
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.lanes = new Lanes(ctx, {
      leasesHeld: () => this.leases.held(),
      attempt: (lane, item) => this.attempts.attempt(lane, item),
      slotFreed: (key) => this.rounds.slotFreed(key),
    });
    this.leases = new Leases(ctx, this.owner, {
      takeWaiting: () => this.lanes.takeWaiting(),
      wake: () => this.wake(),
    });
    const sender = options.sender ?? new Sender(ctx.config.webhookTimeoutMs, ctx.config.webhookAllowPrivateNetworks);
    this.attempts = new Attempts(ctx, this.owner, this.lanes, this.leases, sender);
    this.rounds = new ClaimRounds(ctx, this.owner, this.lanes, this.leases, () => this.wake());
  }

  async run(signal: AbortSignal): Promise<void> {
    // Work is taken only once the heartbeat is written: before, other workers would count this
    // one dead and could take its leases over at once. What is committed meanwhile is left
    // unleased, and the first claim (below, after this) finds it.
    const stopBeating = await this.leases.startHeartbeat();
    const unsubscribe = this.ctx.deliveries.onNotify((targets) => this.rounds.noticed(targets));
    const unlisten = this.ctx.db.listen(DELIVERY_CHANNEL, () => this.wake());
    const detach = this.ctx.deliveries.attach(this);
    const onAbort = () => this.wake();
    signal.addEventListener('abort', onAbort);
    this.running = true;
    // A database outage is logged once, with back-off between claims, not once per poll.
    const failures = new FailureLog(this.ctx, this.name, this.pollMs);
    try {
      while (!signal.aborted) {
        try {
          await this.claimAndStart();
          failures.succeeded();
        } catch (error) {
          failures.failed(error);
        }
        // Whatever the claim left is claimed when a round of slots frees for it (ClaimRounds.slotFreed).
        await this.sleep(failures.delay());
      }
    } finally {
      this.running = false;
      signal.removeEventListener('abort', onAbort);
      detach();
      unsubscribe();
      await unlisten();
      await this.stop();
      stopBeating();
      await this.ctx.db.transact((trx) => removeWorker(trx, this.owner)).catch(() => {});
    }
  }

  /**
   * Claims and sends everything due now, waiting for every attempt to finish; returns how
   * many attempts were made. Tests drive the schedule with it under a manual clock.
   */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.claimAndStart();
      total += claimed;
      if (claimed === 0 && this.pending().length === 0) return total;
      if (claimed === 0 || this.lanes.freeSlots() <= 0) await this.waitForOne();
    }
  }

  async close(): Promise<void> {
    await this.stop();
  }

  // LocalDispatch: fan-out in this process hands committed deliveries over.

  reserve(kind: string, targetId: string, now: number): { owner: string; leaseUntil: number } | null {
    // No heartbeat yet, or a stall: leases taken now might not be this worker's for long.
    if (!this.leases.held()) return null;
    // The lease covers a wait of up to two rounds of the target's slots (Lanes.reserve), the
    // attempt and the margin.
    if (!this.lanes.reserve(targetKey(kind, targetId))) return null;
    const { webhookTimeoutMs, webhookLeaseMarginMs } = this.ctx.config;
    return { owner: this.owner, leaseUntil: now + 2 * webhookTimeoutMs + webhookLeaseMarginMs };
  }

  accept(delivery: SendableDelivery, details: unknown): void {
    const lane = this.lanes.unreserve(targetKey(delivery.kind, delivery.targetId));
    // Leased (its id carries the time: reserve came later) before a stall found since, and
    // committed across it: another worker may have taken it over meanwhile.
    if (this.leases.inDoubt(delivery.id)) {
      this.lanes.dropIfIdle(lane);
      void this.leases.handBack([delivery.id]);
      return;
    }
    this.lanes.enqueue(lane, { delivery, details });
  }

  release(kind: string, targetId: string): void {
    const lane = this.lanes.unreserve(targetKey(kind, targetId));
    this.lanes.dropIfIdle(lane);
    this.rounds.slotFreed(lane.key);
  }

  private claimAndStart(): Promise<number> {
    // The running loop looks one poll ahead and wakes when the next delivery comes due
    // (sleep): deliveries due `spacingMs` apart (a replay) then go out that far apart, not
    // in clumps at each poll. runOnce (tests, a manual clock) claims what is due only.
    return this.rounds.claim(
      this.running ? { lookAheadMs: this.pollMs, onNextDue: (at: number) => this.noteNextDue(at) } : {},
    );
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** The earliest time a claim saw a delivery coming due within its look-ahead. */
  private noteNextDue(at: number): void {
    if (this.nextDueAt === null || at < this.nextDueAt) this.nextDueAt = at;
  }

  /** Until woken, the next delivery is due, or `maxMs` (the poll, longer while claims fail). */
  private async sleep(maxMs: number): Promise<void> {
    const nextDueAt = this.nextDueAt;
    this.nextDueAt = null;
    if (this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
      const untilDue = nextDueAt === null ? maxMs : Math.max(0, nextDueAt - this.ctx.clock.now());
      const timer = setTimeout(done, Math.min(maxMs, untilDue));
      this.wakeUp = done;
    });
    this.woken = false;
  }

  /** Sends under way, held deliveries and hand-backs: runOnce waits for them. */
  private pending(): Promise<void>[] {
    return [...this.lanes.pending(), ...this.leases.pending()];
  }

  private async waitForOne(): Promise<void> {
    const pending = this.pending();
    if (pending.length > 0) await Promise.race(pending);
  }

  /** Finishes every attempt under way and records it; deliveries still waiting in a lane are handed back. */
  private async stop(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopped = this.finish();
    return this.stopped;
  }

  private async finish(): Promise<void> {
    const waiting = this.lanes.takeWaiting();
    if (waiting.length > 0) await this.leases.handBack(waiting);
    await this.lanes.drain();
    // Attempts that found a stall hand their delivery back: those writes finish before closing.
    await this.leases.drain();
    await this.attempts.close();
  }
}
