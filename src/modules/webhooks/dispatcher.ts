/**
 * The delivery dispatcher (worker role). It claims due deliveries, sends each with bounded
 * concurrency — globally and per subscription, so a slow or dead receiver only ever ties up
 * its own slots — and records every attempt. It never holds a transaction open during an
 * HTTP call: claim, send, complete are separate steps.
 *
 * It wakes when a delivery commits in this process (after-commit signal), on PostgreSQL
 * NOTIFY from other processes, when an attempt finishes, and otherwise polls briefly for
 * retries that have come due.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { Job } from '../../worker/worker.js';
import { type ClaimedDelivery, claimDueDeliveries, completeAttempt } from './claims.js';
import { DELIVERY_CHANNEL } from './fanout.js';
import { type AttemptOutcome, type OutgoingRequest, Sender } from './sender.js';
import { signatureHeader } from './signature.js';

/** Poll for due retries this often when nothing wakes the dispatcher sooner. */
const DEFAULT_POLL_MS = 200;
const USER_AGENT = 'Affitrack-Webhooks/1.0';
/**
 * Sends of one delivery whose outcome could not be recorded (storage refusing it, the
 * process dying mid-send) before the engine stops trying: the delivery is then marked failed
 * and logged, instead of being resent at every lease expiry. Crashes make one or two of
 * these in a row at most; five means something keeps failing.
 */
export const MAX_UNRECORDED_SENDS = 5;

export interface DispatcherOptions {
  pollMs?: number;
  sender?: Sender;
}

export class Dispatcher implements Job {
  readonly name = 'webhook-dispatcher';
  private readonly owner = randomUUID();
  private readonly sender: Sender;
  private readonly pollMs: number;
  private readonly inflight = new Set<Promise<void>>();
  private readonly perSubscription = new Map<string, number>();
  private woken = false;
  private wakeUp: (() => void) | null = null;

  constructor(
    private readonly ctx: AppContext,
    options: DispatcherOptions = {},
  ) {
    this.sender = options.sender ?? new Sender(ctx.config.webhookTimeoutMs, ctx.config.webhookAllowPrivateNetworks);
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  }

  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = this.ctx.deliveriesQueued.subscribe(() => this.wake());
    const unlisten = this.ctx.db.listen(DELIVERY_CHANNEL, () => this.wake());
    const onAbort = () => this.wake();
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        let claimed = 0;
        try {
          claimed = await this.claimAndStart();
        } catch (error) {
          this.ctx.logger.error({ err: error }, 'claiming deliveries failed');
        }
        const slotsLeft = this.inflight.size < this.ctx.config.webhookConcurrency;
        if (claimed > 0 && slotsLeft) continue;
        await this.sleep();
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      unsubscribe();
      await unlisten();
      await this.drain();
      await this.sender.close();
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
      if (claimed === 0 && this.inflight.size === 0) return total;
      if (claimed === 0 || this.inflight.size >= this.ctx.config.webhookConcurrency) await this.waitForOne();
    }
  }

  async close(): Promise<void> {
    await this.drain();
    await this.sender.close();
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private async sleep(): Promise<void> {
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
      const timer = setTimeout(done, this.pollMs);
      this.wakeUp = done;
    });
    this.woken = false;
  }

  private async claimAndStart(): Promise<number> {
    const { webhookConcurrency, webhookConcurrencyPerSubscription: perSubLimit, webhookTimeoutMs } = this.ctx.config;
    const free = webhookConcurrency - this.inflight.size;
    if (free <= 0) return 0;
    const busy = (id: string) => this.perSubscription.get(id) ?? 0;
    const claimed = await claimDueDeliveries(this.ctx, {
      owner: this.owner,
      limit: free,
      // A lease outlives the longest possible attempt by a margin before another worker may retry.
      leaseMs: webhookTimeoutMs + this.ctx.config.webhookLeaseMarginMs,
      excludeSubscriptions: [...this.perSubscription].filter(([, n]) => n >= perSubLimit).map(([id]) => id),
      slotsFor: (id) => perSubLimit - busy(id),
    });
    for (const delivery of claimed) {
      this.perSubscription.set(delivery.subscriptionId, busy(delivery.subscriptionId) + 1);
      const task: Promise<void> = this.attempt(delivery).finally(() => {
        this.inflight.delete(task);
        this.wake();
      });
      this.inflight.add(task);
    }
    return claimed.length;
  }

  /** Frees one of the subscription's slots as soon as its receiver has answered. */
  private releaseSlot(subscriptionId: string): void {
    const left = (this.perSubscription.get(subscriptionId) ?? 1) - 1;
    if (left <= 0) this.perSubscription.delete(subscriptionId);
    else this.perSubscription.set(subscriptionId, left);
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const log = this.ctx.logger.child({ deliveryId: delivery.id, eventId: delivery.eventId });
    try {
      const attemptedAt = this.ctx.clock.now();
      if (delivery.unrecordedSends > MAX_UNRECORDED_SENDS) {
        this.releaseSlot(delivery.subscriptionId);
        const unrecorded = delivery.unrecordedSends - 1;
        log.error({ unrecorded }, 'giving up on a delivery whose sends could not be recorded');
        const error = `gave up: the outcome of ${unrecorded} sends in a row could not be recorded`;
        await completeAttempt(
          this.ctx,
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
        outcome = await this.sender.send(outgoingRequest(delivery, attemptedAt));
      } finally {
        this.releaseSlot(delivery.subscriptionId);
      }
      const { recorded, verdict } = await completeAttempt(this.ctx, delivery, this.owner, attemptedAt, outcome);
      if (!recorded) log.warn('lease lost during the attempt; another worker owns this delivery now');
      else if (verdict.status === 'failed') {
        log.warn({ statusCode: outcome.statusCode, error: outcome.error }, 'delivery failed after its last attempt');
      } else if (verdict.status === 'retry_scheduled') {
        log.debug({ statusCode: outcome.statusCode, error: outcome.error }, 'attempt failed; retry scheduled');
      }
    } catch (error) {
      // Storage trouble while completing: the lease will expire and the delivery be retried.
      log.error({ err: error }, 'could not record a delivery attempt');
    }
  }

  private async waitForOne(): Promise<void> {
    if (this.inflight.size > 0) await Promise.race(this.inflight);
  }

  private async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }
}

/**
 * A webhook is the stored envelope POSTed with the spec's headers (signed when the
 * subscription has a secret); a postback is a GET of its filled-in URL, no body.
 */
function outgoingRequest(delivery: ClaimedDelivery, attemptedAt: number): OutgoingRequest {
  if (delivery.kind === 'postback') {
    return { url: delivery.url, method: delivery.method, headers: { 'user-agent': USER_AGENT }, body: null };
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': delivery.event,
    'x-service-webhook-id': delivery.id,
  };
  if (delivery.secret) {
    headers['x-service-signature'] = signatureHeader(delivery.secret, Math.floor(attemptedAt / 1000), delivery.payload);
  }
  return { url: delivery.url, method: 'POST', headers, body: delivery.payload };
}
