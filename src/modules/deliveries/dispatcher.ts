/**
 * The delivery engine's worker: it sends deliveries with bounded concurrency — globally and
 * per target, so a slow or dead receiver only ever ties up its own slots — and records
 * every attempt. It never holds a transaction open during an HTTP call.
 *
 * Work reaches it two ways. New deliveries committed in this process arrive in memory,
 * already leased to it by their creating transaction (fanout.ts), into a lane per target
 * that holds at most two rounds of that target's slots. Everything else — retries coming
 * due, redeliveries, other processes' deliveries, dead workers' leases, what the lanes had
 * no room for — is claimed from the database (claims.ts); the claim loop wakes on an
 * in-process signal, on PostgreSQL NOTIFY, when a slot frees, and otherwise polls briefly.
 *
 * What waits in the lanes is sent on the strength of leases that last only while the
 * heartbeat does: a process that stalls for longer than the take-over threshold may have lost
 * them to another worker. So nothing starts while the heartbeat is in doubt (leasesHeld), and
 * a stall found drops what waited and hands it back to be claimed again — by this worker if
 * the leases were still its own. Checking costs one clock read; no query in normal running.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { timeOfId } from '../../ids.js';
import type { Job } from '../../worker/worker.js';
import { claimDueDeliveries, targetKey } from './claims.js';
import { CompletionBatcher } from './completion.js';
import { DELIVERY_CHANNEL } from './fanout.js';
import { handBackLeases } from './handBack.js';
import {
  forgetDeadWorkers,
  HEARTBEAT_MS,
  LEASES_IN_DOUBT_AFTER_MS,
  recordHeartbeat,
  removeWorker,
} from './heartbeat.js';
import type { LocalDispatch } from './registry.js';
import { type AttemptOutcome, Sender } from './sender.js';
import { SendStarts } from './sendStarts.js';
import type { SendableDelivery } from './target.js';

/** Poll for due retries this often when nothing wakes the dispatcher sooner. */
const DEFAULT_POLL_MS = 200;
/**
 * Sends of one delivery whose outcome could not be recorded (storage refusing it, the
 * process dying mid-send) before the engine stops trying: the delivery is then marked failed
 * and logged, instead of being resent at every lease expiry. Crashes make one or two of
 * these in a row at most; five means something keeps failing.
 */
export const MAX_UNRECORDED_SENDS = 5;
/** Beats between two sweeps of long-dead workers' rows. */
const SWEEP_EVERY_BEATS = 600;

export interface DispatcherOptions {
  pollMs?: number;
  sender?: Sender;
}

interface Queued {
  delivery: SendableDelivery;
  details: unknown;
}

/** A throttled target's delivery held until its send slot (throttle.ts); holding it is no attempt. */
interface Held {
  item: Queued;
  timer: NodeJS.Timeout;
  release: () => void;
}

/** One target's deliveries in this process: sending, reserved by uncommitted fan-outs, waiting, held for a send slot. */
interface Lane {
  key: string;
  inflight: number;
  reserved: number;
  waiting: Queued[];
  held: Held[];
  /** A throttled target's delivery is taking its shared send start (takeSharedStart); the next waits for it. */
  starting: boolean;
}

export class Dispatcher implements Job, LocalDispatch {
  readonly name = 'delivery-dispatcher';
  readonly owner = randomUUID();
  private readonly sender: Sender;
  private readonly completions: CompletionBatcher;
  private readonly pollMs: number;
  private readonly attempts = new Set<Promise<void>>();
  /** Settles when a held delivery is released into its lane (runOnce waits for them too). */
  private readonly holds = new Set<Promise<void>>();
  /** Leases being handed back (handBack); runOnce and stopping wait for them. */
  private readonly handingBack = new Set<Promise<void>>();
  /**
   * Deliveries whose hand-back failed — a stall is often the database being away, which stops
   * the heartbeat too: handed back after the next beat that is written, or their leases would
   * keep them (this worker's claims skip its own leases) until they expire.
   */
  private readonly unreturned: string[] = [];
  private readonly lanes = new Map<string, Lane>();
  /** Throttled targets' send starts: their spacing here, and on PostgreSQL their shared starts. */
  private readonly starts: SendStarts;
  /** Lanes with waiting deliveries that a free global slot may serve. */
  private readonly starved = new Set<Lane>();
  private sending = 0;
  private queued = 0;
  private reservedTotal = 0;
  private woken = false;
  /**
   * Targets whose due deliveries the last claim left for want of their slots, and whether it
   * ran out of global room: a freed slot claims again once there is a round's room for them.
   */
  private readonly leftForSlots = new Set<string>();
  private leftForGlobalRoom = false;
  /** A claim is under way; slots freed meanwhile are looked at when it ends. */
  private claiming = false;
  private freedWhileClaiming = false;
  /** When this dispatcher's heartbeat was last written (claims skip the write while it is fresh). */
  private lastBeatAt = Number.NEGATIVE_INFINITY;
  /** When a stall was last found (leasesHeld): leases taken at fan-out before it are in doubt. */
  private leasesDoubtedAt = Number.NEGATIVE_INFINITY;
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
    this.sender = options.sender ?? new Sender(ctx.config.webhookTimeoutMs, ctx.config.webhookAllowPrivateNetworks);
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.completions = new CompletionBatcher(ctx);
    this.starts = new SendStarts(ctx);
  }

  private get concurrency(): number {
    return this.ctx.config.webhookConcurrency;
  }

  private get perTarget(): number {
    return this.ctx.config.webhookConcurrencyPerSubscription;
  }

  async run(signal: AbortSignal): Promise<void> {
    // Work is taken only once the heartbeat is written: before, other workers would count this
    // one dead and could take its leases over at once. What is committed meanwhile is left
    // unleased, and the first claim (below, after this) finds it.
    const stopBeating = await this.startHeartbeat();
    const unsubscribe = this.ctx.deliveries.onNotify((targets) => this.noticed(targets));
    const unlisten = this.ctx.db.listen(DELIVERY_CHANNEL, () => this.wake());
    const detach = this.ctx.deliveries.attach(this);
    const onAbort = () => this.wake();
    signal.addEventListener('abort', onAbort);
    this.running = true;
    try {
      while (!signal.aborted) {
        try {
          await this.claimAndStart();
        } catch (error) {
          this.ctx.logger.error({ err: error }, 'claiming deliveries failed');
        }
        // Whatever the claim left is claimed when a round of slots frees for it (freeSlot).
        await this.sleep();
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
      if (claimed === 0 && this.attempts.size === 0 && this.holds.size === 0 && this.handingBack.size === 0) {
        return total;
      }
      if (claimed === 0 || this.freeSlots() <= 0) await this.waitForOne();
    }
  }

  async close(): Promise<void> {
    await this.stop();
  }

  // LocalDispatch: fan-out in this process hands committed deliveries over.

  reserve(kind: string, targetId: string, now: number): { owner: string; leaseUntil: number } | null {
    // No heartbeat yet, or a stall: leases taken now might not be this worker's for long.
    if (!this.leasesHeld()) return null;
    const lane = this.lane(targetKey(kind, targetId));
    // Two rounds of the target's slots at most, so nothing waits here longer than one
    // time-out; the lease covers that wait, the attempt and the margin.
    if (lane.inflight + lane.reserved + lane.waiting.length >= 2 * this.perTarget) return null;
    if (this.sending + this.queued + this.reservedTotal >= 2 * this.concurrency) return null;
    lane.reserved += 1;
    this.reservedTotal += 1;
    const { webhookTimeoutMs, webhookLeaseMarginMs } = this.ctx.config;
    return { owner: this.owner, leaseUntil: now + 2 * webhookTimeoutMs + webhookLeaseMarginMs };
  }

  accept(delivery: SendableDelivery, details: unknown): void {
    const lane = this.lane(targetKey(delivery.kind, delivery.targetId));
    lane.reserved -= 1;
    this.reservedTotal -= 1;
    // Leased (its id carries the time: reserve came later) before a stall found since, and
    // committed across it: another worker may have taken it over meanwhile.
    if (
      this.leasesDoubtedAt > Number.NEGATIVE_INFINITY &&
      (timeOfId(delivery.id) ?? Number.NEGATIVE_INFINITY) < this.leasesDoubtedAt
    ) {
      this.dropIfIdle(lane);
      void this.handBack([delivery.id]);
      return;
    }
    this.enqueue(lane, { delivery, details });
  }

  release(kind: string, targetId: string): void {
    const lane = this.lane(targetKey(kind, targetId));
    lane.reserved -= 1;
    this.reservedTotal -= 1;
    this.dropIfIdle(lane);
    if (this.claiming) this.freedWhileClaiming = true;
    else if (this.roomForLeftWork([lane.key])) this.wake();
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { key, inflight: 0, reserved: 0, waiting: [], held: [], starting: false };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private dropIfIdle(lane: Lane): void {
    if (lane.inflight === 0 && lane.reserved === 0 && lane.waiting.length === 0 && lane.held.length === 0) {
      this.lanes.delete(lane.key);
    }
  }

  private freeSlots(): number {
    return this.concurrency - this.sending - this.queued;
  }

  private enqueue(lane: Lane, item: Queued): void {
    const wait = (item.delivery.notBefore ?? 0) - this.ctx.clock.now();
    if (wait > 0) {
      this.hold(lane, item, wait);
      return;
    }
    lane.waiting.push(item);
    this.queued += 1;
    this.pump(lane);
  }

  /**
   * Holds a throttled delivery until its send slot: it occupies its own lane (so the target's
   * slots bound how many are held) but no global slot, so other targets are not slowed.
   */
  private hold(lane: Lane, item: Queued, waitMs: number): void {
    let release = () => {};
    const settled = new Promise<void>((resolve) => {
      release = resolve;
    });
    const due = () => {
      // A timer may fire a millisecond before the clock reaches the slot: never send early.
      const left = (item.delivery.notBefore ?? 0) - this.ctx.clock.now();
      if (left > 0) {
        held.timer = setTimeout(due, left);
        return;
      }
      lane.held.splice(lane.held.indexOf(held), 1);
      lane.waiting.push(item);
      this.queued += 1;
      this.pump(lane);
      release();
    };
    const held: Held = { item, release, timer: setTimeout(due, waitMs) };
    lane.held.push(held);
    const tracked: Promise<void> = settled.finally(() => this.holds.delete(tracked));
    this.holds.add(tracked);
  }

  /**
   * Starts what the lane's and the global slots allow. A throttled delivery also keeps its
   * target's spacing from the one started before it: slots that all passed while every global
   * slot was busy would otherwise be sent together, faster than the rate. Where several
   * processes send (PostgreSQL), its deliveries also take their starts from the database,
   * one at a time (takeSharedStart, sendStarts.ts).
   */
  private pump(lane: Lane): void {
    if (!this.leasesHeld()) return;
    while (lane.waiting.length > 0 && lane.inflight < this.perTarget && this.sending < this.concurrency) {
      const item = lane.waiting[0] as Queued;
      const gap = item.delivery.slotGapMs;
      if (gap !== undefined) {
        if (lane.starting) break;
        const now = this.ctx.clock.now();
        const wait = this.starts.waitHere(lane.key, gap, now);
        if (wait > 0) {
          lane.waiting.shift();
          this.queued -= 1;
          item.delivery.notBefore = now + wait;
          this.hold(lane, item, wait);
          continue;
        }
        if (this.starts.shared) lane.starting = true;
        else this.starts.note(lane.key, now);
      }
      lane.waiting.shift();
      this.queued -= 1;
      lane.inflight += 1;
      this.sending += 1;
      const task: Promise<void> = this.attempt(lane, item).finally(() => this.attempts.delete(task));
      this.attempts.add(task);
    }
    if (lane.waiting.length > 0 && lane.inflight < this.perTarget) this.starved.add(lane);
    else this.starved.delete(lane);
  }

  /** A send finished: its slots serve its own lane first, then lanes waiting for a global slot. */
  private freeSlot(lane: Lane): void {
    lane.inflight -= 1;
    this.sending -= 1;
    this.pump(lane);
    for (const other of this.starved) {
      if (this.sending >= this.concurrency) break;
      this.pump(other);
    }
    this.dropIfIdle(lane);
    // Claim again only when work was left for want of slots, and only once a whole round of
    // slots is free for it: a claim per finished send would cost a transaction per delivery.
    // Slots freed during a claim are looked at when it ends.
    if (this.claiming) this.freedWhileClaiming = true;
    else if (this.roomForLeftWork([lane.key])) this.wake();
  }

  /** Whether a round of slots is free for work the last claim left, globally or for one of `keys`. */
  private roomForLeftWork(keys: Iterable<string>): boolean {
    if (this.leftForGlobalRoom && this.sending + this.queued + this.reservedTotal <= this.concurrency) return true;
    for (const key of keys) if (this.leftForSlots.has(key) && this.occupied(key) <= this.perTarget) return true;
    return false;
  }

  /** A target's deliveries in this process: sending, reserved, waiting or held. */
  private occupied(key: string): number {
    const lane = this.lanes.get(key);
    return lane ? lane.inflight + lane.reserved + lane.waiting.length + lane.held.length : 0;
  }

  /**
   * Claims into the same two rounds of slots that fan-out leases into (reserve), globally and
   * per target, so a target with a backlog gets at least a round of deliveries per claim.
   */
  private async claimAndStart(): Promise<number> {
    const free = 2 * this.concurrency - this.sending - this.queued - this.reservedTotal;
    if (free <= 0) {
      // Whatever is due waits for global room: a freed slot claims once a round is free.
      this.leftForGlobalRoom = true;
      return 0;
    }
    this.leftForSlots.clear();
    this.leftForGlobalRoom = false;
    this.claiming = true;
    this.freedWhileClaiming = false;
    try {
      return await this.claimInto(free);
    } finally {
      this.claiming = false;
      if (this.freedWhileClaiming && this.roomForLeftWork(this.leftForSlots)) this.wake();
    }
  }

  private async claimInto(free: number): Promise<number> {
    const { webhookTimeoutMs, webhookLeaseMarginMs } = this.ctx.config;
    const details = new Map<string, Map<string, unknown>>();
    const now = this.ctx.clock.now();
    const beat = now - this.lastBeatAt >= HEARTBEAT_MS;
    const claimed = await claimDueDeliveries(this.ctx, {
      owner: this.owner,
      beat,
      onLeftForSlots: (key) => this.leftForSlots.add(key),
      limit: free,
      // A claimed delivery may wait up to one round of its target's attempts, then its own
      // attempt, and a margin on top before another worker may retry it (as reserve's lease).
      leaseMs: 2 * webhookTimeoutMs + webhookLeaseMarginMs,
      excludeTargets: [...this.lanes.keys()].filter((key) => this.occupied(key) > this.perTarget),
      slotsFor: (key) => 2 * this.perTarget - this.occupied(key),
      onDetails: (kind, map) => details.set(kind, map),
      // The running loop looks one poll ahead and wakes when the next delivery comes due
      // (sleep): deliveries due `spacingMs` apart (a replay) then go out that far apart, not
      // in clumps at each poll. runOnce (tests, a manual clock) claims what is due only.
      ...(this.running ? { lookAheadMs: this.pollMs, onNextDue: (at: number) => this.noteNextDue(at) } : {}),
    });
    if (beat) this.noteBeat(now);
    if (claimed.length >= free) this.leftForGlobalRoom = true;
    for (const delivery of claimed) {
      this.enqueue(this.lane(targetKey(delivery.kind, delivery.targetId)), {
        delivery,
        details: details.get(delivery.kind)?.get(delivery.targetId),
      });
    }
    return claimed.length;
  }

  private async attempt(lane: Lane, item: Queued): Promise<void> {
    const { delivery, details } = item;
    // Built only when something is logged: most attempts log nothing.
    const log = () => this.ctx.logger.child({ deliveryId: delivery.id, eventId: delivery.eventId });
    try {
      if (lane.starting) {
        if (!(await this.takeSharedStart(lane, item, delivery.slotGapMs ?? 0))) return;
        // Taking the start waited on the database: a stall meanwhile may have cost the lease.
        if (!this.leasesHeld()) {
          this.freeSlot(lane);
          await this.handBack([delivery.id]);
          return;
        }
      }
      const attemptedAt = this.ctx.clock.now();
      if (delivery.unrecordedSends > MAX_UNRECORDED_SENDS) {
        this.freeSlot(lane);
        const unrecorded = delivery.unrecordedSends - 1;
        log().error({ unrecorded }, 'giving up on a delivery whose sends could not be recorded');
        const error = `gave up: the outcome of ${unrecorded} sends in a row could not be recorded`;
        await this.completions.complete(
          delivery,
          this.owner,
          attemptedAt,
          { statusCode: null, latencyMs: 0, responseBody: null, error },
          { status: 'failed', nextAttemptAt: null },
        );
        return;
      }
      let outcome: AttemptOutcome;
      try {
        const target = this.ctx.deliveries.targets.get(delivery.kind);
        if (!target) throw new Error(`no target kind ${delivery.kind} is registered`);
        outcome = await this.sender.send(target.request(delivery, details, attemptedAt));
      } finally {
        this.freeSlot(lane);
      }
      const { recorded, verdict } = await this.completions.complete(delivery, this.owner, attemptedAt, outcome);
      if (!recorded) log().warn('lease lost during the attempt; another worker owns this delivery now');
      else if (verdict.status === 'failed') {
        log().warn({ statusCode: outcome.statusCode, error: outcome.error }, 'delivery failed after its last attempt');
      } else if (verdict.status === 'retry_scheduled') {
        log().debug({ statusCode: outcome.statusCode, error: outcome.error }, 'attempt failed; retry scheduled');
      }
    } catch (error) {
      // Storage trouble while completing: the lease will end and the delivery be sent again
      // (at most MAX_UNRECORDED_SENDS times in a row).
      log().error({ err: error }, 'could not record a delivery attempt');
    }
  }

  /**
   * A throttled delivery's last check before its send, where several processes send: whether
   * the target's interval has passed since its last send started in any of them
   * (SendStarts.takeShared). Refused, the delivery gives its send slots back and is held until
   * the interval has passed. Either way the lane's next delivery may then take its turn.
   */
  private async takeSharedStart(lane: Lane, item: Queued, gap: number): Promise<boolean> {
    const { now, wait } = await this.starts.takeShared(lane.key, gap);
    lane.starting = false;
    if (wait > 0) {
      // The lane's next delivery is not due before this one.
      this.starts.note(lane.key, now + wait - gap);
      item.delivery.notBefore = now + wait;
      this.hold(lane, item, wait);
      this.freeSlot(lane);
      return false;
    }
    // The send starts now: local spacing counts from here, however long the write took.
    this.starts.note(lane.key, this.ctx.clock.now());
    this.pump(lane);
    return true;
  }

  /** Writes the first heartbeat (failing or not), then one every HEARTBEAT_MS until stopped. */
  private async startHeartbeat(): Promise<() => void> {
    let beats = 0;
    let failing = false;
    const beat = async () => {
      const now = this.ctx.clock.now();
      try {
        await this.ctx.db.transact(async (trx) => {
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

  /** A heartbeat written at `at` has committed: a silence before it that was too long voids what waits. */
  private noteBeat(at: number): void {
    this.leasesHeld();
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
  private leasesHeld(): boolean {
    const now = this.ctx.clock.now();
    if (now - this.lastBeatAt < LEASES_IN_DOUBT_AFTER_MS) return true;
    // Before its first heartbeat a dispatcher has no lease to doubt: it only takes none.
    if (this.lastBeatAt === Number.NEGATIVE_INFINITY) return false;
    this.leasesDoubtedAt = now;
    const stale = this.takeWaiting();
    if (stale.length > 0) {
      this.ctx.logger.warn(
        { silentMs: now - this.lastBeatAt, deliveries: stale.length },
        'this worker was silent long enough to lose its leases; handing back what it had not sent',
      );
      void this.handBack(stale.map((item) => item.delivery.id));
    }
    return false;
  }

  /** Takes every delivery not yet started out of the lanes: waiting for a slot, or held for a send slot. */
  private takeWaiting(): Queued[] {
    const lanes = [...this.lanes.values()];
    const held = lanes.flatMap((lane) => lane.held.splice(0));
    for (const h of held) {
      clearTimeout(h.timer);
      h.release();
    }
    const queued = lanes.flatMap((lane) => lane.waiting.splice(0));
    this.queued -= queued.length;
    this.starved.clear();
    for (const lane of lanes) this.dropIfIdle(lane);
    return [...queued, ...held.map((h) => h.item)];
  }

  /** Gives up leases not used (handBack.ts); the claim loop then looks for them again. */
  private handBack(ids: string[]): Promise<void> {
    const task: Promise<void> = this.ctx.db
      .transact((trx) => handBackLeases(trx, this.owner, ids))
      .catch((error) => {
        this.ctx.logger.error({ err: error }, 'could not hand back waiting deliveries');
        this.unreturned.push(...ids);
      })
      .finally(() => {
        this.handingBack.delete(task);
        this.wake();
      });
    this.handingBack.add(task);
    return task;
  }

  /**
   * Unleased deliveries were committed in this process. When all of them are for targets
   * whose lanes hold more than a round already, a claim now would take nothing: they are
   * noted instead, and claimed once a lane has a round's room (freeSlot).
   */
  private noticed(targets: readonly string[] | undefined): void {
    if (targets && targets.length > 0 && targets.every((key) => this.occupied(key) > this.perTarget)) {
      for (const key of targets) this.leftForSlots.add(key);
      return;
    }
    this.wake();
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** The earliest time a claim saw a delivery coming due within its look-ahead. */
  private noteNextDue(at: number): void {
    if (this.nextDueAt === null || at < this.nextDueAt) this.nextDueAt = at;
  }

  private async sleep(): Promise<void> {
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
      const untilDue = nextDueAt === null ? this.pollMs : Math.max(0, nextDueAt - this.ctx.clock.now());
      const timer = setTimeout(done, Math.min(this.pollMs, untilDue));
      this.wakeUp = done;
    });
    this.woken = false;
  }

  private async waitForOne(): Promise<void> {
    const pending = [...this.attempts, ...this.holds, ...this.handingBack];
    if (pending.length > 0) await Promise.race(pending);
  }

  /** Finishes every attempt under way and records it; deliveries still waiting in a lane are handed back. */
  private async stop(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopped = this.finish();
    return this.stopped;
  }

  private async finish(): Promise<void> {
    const waiting = this.takeWaiting();
    if (waiting.length > 0) await this.handBack(waiting.map((w) => w.delivery.id));
    while (this.attempts.size > 0) await Promise.allSettled([...this.attempts]);
    // Attempts that found a stall hand their delivery back: those writes finish before closing.
    await Promise.allSettled([...this.handingBack]);
    await this.completions.drain();
    await this.sender.close();
  }
}
