/** The events API's one write: resending an event to a subscription. */
import type { AppContext } from '../../context.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import type { DeliveryRow } from '../deliveries/repository.js';
import { queueDeliveryOf } from '../deliveries/resend.js';
import { findSubscription } from '../webhooks/repository.js';
import { webhookTarget } from '../webhooks/target.js';
import { findEvent } from './repository.js';

/**
 * Queues a new delivery of the event to one of the brand's subscriptions, whether or not it
 * chose the event or existed when it happened (Svix-style resend: a backfill, or one more
 * copy). A new wh_ id; the evt_ id and body are the event's own, so receivers de-duplicate.
 */
export async function resendEvent(
  ctx: AppContext,
  brandId: string,
  eventId: string,
  subscriptionId: string,
): Promise<DeliveryRow> {
  return ctx.db.transact(async (trx) => {
    const event = await findEvent(trx, brandId, eventId);
    if (!event) throw new NotFoundError('Event');
    if (event.test === 1) throw new ConflictError('A test event is not resent; send a new test instead.');
    const subscription = await findSubscription(trx, brandId, subscriptionId);
    if (!subscription) throw InvalidError.at('subscriptionId', 'no such subscription');
    if (subscription.status !== 'active') {
      throw new ConflictError('The subscription is disabled; enable it before resending to it.');
    }
    return queueDeliveryOf(
      ctx,
      trx,
      { id: event.id, brandId, type: event.type },
      { kind: webhookTarget.kind, targetId: subscription.id },
    );
  });
}
