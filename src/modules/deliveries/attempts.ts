/**
 * The dispatcher's attempts: one delivery that took its slots in a lane (lanes.ts) is sent
 * (sender.ts), its slots are given back as soon as the answer is in, and its outcome is
 * recorded (completion.ts) — never with a transaction open during the HTTP call. A throttled
 * delivery on PostgreSQL first takes its shared start, and checks again that its lease held
 * while it waited (leases.ts); a delivery whose sends keep going unrecorded is given up on.
 */
import type { AppContext } from '../../context.js';
import { CompletionBatcher } from './completion.js';
import type { Lane, Lanes, Queued } from './lanes.js';
import type { Leases } from './leases.js';
import type { AttemptOutcome, Sender } from './sender.js';

/**
 * Sends of one delivery whose outcome could not be recorded (storage refusing it, the
 * process dying mid-send) before the engine stops trying: the delivery is then marked failed
 * and logged, instead of being resent at every lease expiry. Crashes make one or two of
 * these in a row at most; five means something keeps failing.
 */
export const MAX_UNRECORDED_SENDS = 5;

export class Attempts {
  private readonly completions: CompletionBatcher;

  constructor(
    private readonly ctx: AppContext,
    private readonly owner: string,
    private readonly lanes: Lanes,
    private readonly leases: Leases,
    private readonly sender: Sender,
  ) {
    this.completions = new CompletionBatcher(ctx);
  }

  async attempt(lane: Lane, item: Queued): Promise<void> {
    const { delivery, details } = item;
    // Built only when something is logged: most attempts log nothing.
    const log = () => this.ctx.logger.child({ deliveryId: delivery.id, eventId: delivery.eventId });
    try {
      if (lane.starting) {
        if (!(await this.lanes.takeSharedStart(lane, item, delivery.slotGapMs ?? 0))) return;
        // Taking the start waited on the database: a stall meanwhile may have cost the lease.
        if (!this.leases.held()) {
          this.lanes.freeSlot(lane);
          await this.leases.handBack([delivery.id]);
          return;
        }
      }
      const attemptedAt = this.ctx.clock.now();
      if (delivery.unrecordedSends > MAX_UNRECORDED_SENDS) {
        this.lanes.freeSlot(lane);
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
        this.lanes.freeSlot(lane);
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

  /** Records the outcomes still batched, then closes the sender; every attempt must have ended. */
  async close(): Promise<void> {
    await this.completions.drain();
    await this.sender.close();
  }
}
