/**
 * The registered target kinds and, when this process runs a dispatcher, the door to it. One
 * per process context (ctx.deliveries). Fan-out asks it for a lease on each new delivery:
 * when the local dispatcher has room for the target, the creating transaction leases the
 * delivery to it and the committed delivery is handed over in memory — no claim query, no
 * wait for a poll. Otherwise the delivery is left unleased for any dispatcher to claim.
 */
import type { DeliveryTarget, SendableDelivery } from './target.js';

/** What the local dispatcher offers to fan-out (dispatcher.ts implements it). */
export interface LocalDispatch {
  /** A lease for one new delivery of this target, reserved until `accept` or `release`; null when there is no room. */
  reserve(kind: string, targetId: string, now: number): { owner: string; leaseUntil: number } | null;
  /** The delivery committed: send it. */
  accept(delivery: SendableDelivery, details: unknown): void;
  /** The delivery did not commit: free the reservation. */
  release(kind: string, targetId: string): void;
}

export class DeliveryRegistry {
  readonly targets: ReadonlyMap<string, DeliveryTarget>;
  private local: LocalDispatch | null = null;
  private readonly listeners = new Set<(targets?: readonly string[]) => void>();

  constructor(targets: DeliveryTarget[]) {
    this.targets = new Map(targets.map((t) => [t.kind, t]));
  }

  /** The local dispatcher, while one runs. */
  get localDispatch(): LocalDispatch | null {
    return this.local;
  }

  attach(local: LocalDispatch): () => void {
    this.local = local;
    return () => {
      if (this.local === local) this.local = null;
    };
  }

  /**
   * "Unleased deliveries were committed": wakes the local dispatcher's claim loop. `targets`:
   * their targets' keys (targetKey), when the caller knows them.
   */
  notify(targets?: readonly string[]): void {
    for (const listener of this.listeners) listener(targets);
  }

  onNotify(listener: (targets?: readonly string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
