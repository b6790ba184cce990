/**
 * The dispatcher's per-target lanes and its send slots: globally (`WEBHOOK_CONCURRENCY`) and
 * per target (`WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION`), so a slow or dead receiver only ever
 * ties up its own slots. A lane holds what its target is sending, what fan-outs not yet
 * committed reserved, what waits for a slot, and a throttled target's deliveries held until
 * their send slot. It starts what the slots allow and gives freed slots to its own target
 * first, then to lanes starved of a global slot. Where the deliveries come from
 * (dispatcher.ts, claimRounds.ts) and the attempt itself (attempts.ts) are not its business.
 */
import type { AppContext } from '../../context.js';
import { SendStarts } from './sendStarts.js';
import type { SendableDelivery } from './target.js';

export interface Queued {
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
export interface Lane {
  key: string;
  inflight: number;
  reserved: number;
  waiting: Queued[];
  held: Held[];
  /** A throttled target's delivery is taking its shared send start (takeSharedStart); the next waits for it. */
  starting: boolean;
}

/** What the lanes ask of the dispatcher that runs them. */
export interface LaneHooks {
  /** Whether this worker's leases are surely still its own: nothing starts while they are in doubt. */
  leasesHeld(): boolean;
  /** Sends a delivery that took its slots; the attempt gives them back (freeSlot). */
  attempt(lane: Lane, item: Queued): Promise<void>;
  /** A send finished and its slots were passed on: the claim loop may now have room for work it left. */
  slotFreed(key: string): void;
}

export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with waiting deliveries that a free global slot may serve. */
  private readonly starved = new Set<Lane>();
  /** Throttled targets' send starts: their spacing here, and on PostgreSQL their shared starts. */
  private readonly starts: SendStarts;
  private readonly attempts = new Set<Promise<void>>();
  /** Settles when a held delivery is released into its lane (runOnce waits for them too). */
  private readonly holds = new Set<Promise<void>>();
  private sending = 0;
  private queued = 0;
  private reservedTotal = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly hooks: LaneHooks,
  ) {
    this.starts = new SendStarts(ctx);
  }

  /** Sends at once in this worker, and per target (the claim rounds size their claims by them). */
  get concurrency(): number {
    return this.ctx.config.webhookConcurrency;
  }

  get perTarget(): number {
    return this.ctx.config.webhookConcurrencyPerSubscription;
  }

  /** Deliveries counted against the global slots: sending, waiting for a slot, reserved (held ones are not). */
  get load(): number {
    return this.sending + this.queued + this.reservedTotal;
  }

  /** Global slots a waiting delivery could start in now. */
  freeSlots(): number {
    return this.concurrency - this.sending - this.queued;
  }

  /** The targets that have a lane. */
  keys(): Iterable<string> {
    return this.lanes.keys();
  }

  lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { key, inflight: 0, reserved: 0, waiting: [], held: [], starting: false };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  dropIfIdle(lane: Lane): void {
    if (lane.inflight === 0 && lane.reserved === 0 && lane.waiting.length === 0 && lane.held.length === 0) {
      this.lanes.delete(lane.key);
    }
  }

  /** Reserves a place in `key`'s lane for a delivery a fan-out is about to commit; false when there is no room. */
  reserve(key: string): boolean {
    const lane = this.lane(key);
    // Two rounds of the target's slots at most, so nothing waits here longer than one
    // time-out; the lease covers that wait, the attempt and the margin.
    if (lane.inflight + lane.reserved + lane.waiting.length >= 2 * this.perTarget) return false;
    if (this.load >= 2 * this.concurrency) return false;
    lane.reserved += 1;
    this.reservedTotal += 1;
    return true;
  }

  /** The fan-out behind a reservation committed (accept) or did not (release): its place is freed. */
  unreserve(key: string): Lane {
    const lane = this.lane(key);
    lane.reserved -= 1;
    this.reservedTotal -= 1;
    return lane;
  }

  enqueue(lane: Lane, item: Queued): void {
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
    if (!this.hooks.leasesHeld()) return;
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
      const task: Promise<void> = this.hooks.attempt(lane, item).finally(() => this.attempts.delete(task));
      this.attempts.add(task);
    }
    if (lane.waiting.length > 0 && lane.inflight < this.perTarget) this.starved.add(lane);
    else this.starved.delete(lane);
  }

  /** A send finished: its slots serve its own lane first, then lanes waiting for a global slot. */
  freeSlot(lane: Lane): void {
    lane.inflight -= 1;
    this.sending -= 1;
    this.pump(lane);
    for (const other of this.starved) {
      if (this.sending >= this.concurrency) break;
      this.pump(other);
    }
    this.dropIfIdle(lane);
    this.hooks.slotFreed(lane.key);
  }

  /**
   * A throttled delivery's last check before its send, where several processes send: whether
   * the target's interval has passed since its last send started in any of them
   * (SendStarts.takeShared). Refused, the delivery gives its send slots back and is held until
   * the interval has passed. Either way the lane's next delivery may then take its turn.
   */
  async takeSharedStart(lane: Lane, item: Queued, gap: number): Promise<boolean> {
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

  /** A target's deliveries in this process: sending, reserved, waiting or held. */
  occupied(key: string): number {
    const lane = this.lanes.get(key);
    return lane ? lane.inflight + lane.reserved + lane.waiting.length + lane.held.length : 0;
  }

  /**
   * Takes every delivery not yet started out of the lanes: waiting for a slot, or held for a
   * send slot. Returns their ids, to hand their leases back.
   */
  takeWaiting(): string[] {
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
    return [...queued, ...held.map((h) => h.item)].map((item) => item.delivery.id);
  }

  /** Sends under way and held deliveries, each settling when it ends or is released into its lane. */
  pending(): Promise<void>[] {
    return [...this.attempts, ...this.holds];
  }

  /** Waits for every send under way, including those started meanwhile. */
  async drain(): Promise<void> {
    while (this.attempts.size > 0) await Promise.allSettled([...this.attempts]);
  }
}
