/**
 * When the dispatcher claims, and how much; the claim itself is claims.ts'. A claim is a
 * transaction, so the dispatcher claims in rounds: into the same two rounds of slots,
 * globally and per target, that fan-out leases into (Dispatcher.reserve), and again only once
 * a whole round of slots is free for work the last claim left — not after every finished
 * send. A notice of new unleased deliveries whose lanes are all full is only noted, for the
 * same reason. What is claimed goes into the lanes (lanes.ts).
 */
import type { AppContext } from '../../context.js';
import { type ClaimOptions, claimDueDeliveries, targetKey } from './claims.js';
import type { Lanes } from './lanes.js';
import type { Leases } from './leases.js';

/** How far a claim looks ahead for deliveries coming due, and who hears of the first. */
export type LookAhead = Pick<ClaimOptions, 'lookAheadMs' | 'onNextDue'>;

export class ClaimRounds {
  /**
   * Targets whose due deliveries the last claim left for want of their slots, and whether it
   * ran out of global room: a freed slot claims again once there is a round's room for them.
   */
  private readonly leftForSlots = new Set<string>();
  private leftForGlobalRoom = false;
  /** A claim is under way; slots freed meanwhile are looked at when it ends. */
  private claiming = false;
  private freedWhileClaiming = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly owner: string,
    private readonly lanes: Lanes,
    private readonly leases: Leases,
    /** Wakes the claim loop: a round of slots is free for work left, or a notice wants a claim. */
    private readonly wake: () => void,
  ) {}

  /**
   * Claims into the same two rounds of slots that fan-out leases into (Dispatcher.reserve),
   * globally and per target, so a target with a backlog gets at least a round of deliveries
   * per claim. Returns how many deliveries it claimed.
   */
  async claim(lookAhead: LookAhead): Promise<number> {
    const free = 2 * this.lanes.concurrency - this.lanes.load;
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
      return await this.claimInto(free, lookAhead);
    } finally {
      this.claiming = false;
      if (this.freedWhileClaiming && this.roomForLeftWork(this.leftForSlots)) this.wake();
    }
  }

  private async claimInto(free: number, lookAhead: LookAhead): Promise<number> {
    const { webhookTimeoutMs, webhookLeaseMarginMs } = this.ctx.config;
    const details = new Map<string, Map<string, unknown>>();
    const now = this.ctx.clock.now();
    const beat = this.leases.beatDue(now);
    const claimed = await claimDueDeliveries(this.ctx, {
      owner: this.owner,
      beat,
      onLeftForSlots: (key) => this.leftForSlots.add(key),
      limit: free,
      // A claimed delivery may wait up to one round of its target's attempts, then its own
      // attempt, and a margin on top before another worker may retry it (as the lease
      // Dispatcher.reserve gives).
      leaseMs: 2 * webhookTimeoutMs + webhookLeaseMarginMs,
      excludeTargets: [...this.lanes.keys()].filter((key) => this.lanes.occupied(key) > this.lanes.perTarget),
      slotsFor: (key) => 2 * this.lanes.perTarget - this.lanes.occupied(key),
      onDetails: (kind, map) => details.set(kind, map),
      ...lookAhead,
    });
    if (beat) this.leases.noteBeat(now);
    if (claimed.length >= free) this.leftForGlobalRoom = true;
    for (const delivery of claimed) {
      this.lanes.enqueue(this.lanes.lane(targetKey(delivery.kind, delivery.targetId)), {
        delivery,
        details: details.get(delivery.kind)?.get(delivery.targetId),
      });
    }
    return claimed.length;
  }

  /**
   * A slot or a reservation in `key`'s lane was freed. Claim again only when work was left for
   * want of slots, and only once a whole round of slots is free for it: a claim per finished
   * send would cost a transaction per delivery. Slots freed during a claim are looked at when
   * it ends.
   */
  slotFreed(key: string): void {
    if (this.claiming) this.freedWhileClaiming = true;
    else if (this.roomForLeftWork([key])) this.wake();
  }

  /**
   * Unleased deliveries were committed in this process. When all of them are for targets
   * whose lanes hold more than a round already, a claim now would take nothing: they are
   * noted instead, and claimed once a lane has a round's room (slotFreed).
   */
  noticed(targets: readonly string[] | undefined): void {
    if (targets && targets.length > 0 && targets.every((key) => this.lanes.occupied(key) > this.lanes.perTarget)) {
      for (const key of targets) this.leftForSlots.add(key);
      return;
    }
    this.wake();
  }

  /** Whether a round of slots is free for work the last claim left, globally or for one of `keys`. */
  private roomForLeftWork(keys: Iterable<string>): boolean {
    if (this.leftForGlobalRoom && this.lanes.load <= this.lanes.concurrency) return true;
    for (const key of keys)
      if (this.leftForSlots.has(key) && this.lanes.occupied(key) <= this.lanes.perTarget) return true;
    return false;
  }
}
