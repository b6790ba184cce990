/** The delivery log's one write: redelivery. */
import type { AppContext } from '../../context.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { announceDeliveries } from './fanout.js';
import { type DeliveryRow, findDelivery } from './repository.js';

/**
 * Queues a finished (succeeded or failed) delivery again: same delivery id, same event and
 * body, a fresh retry sequence; attempt numbers in the log continue.
 */
export async function redeliver(ctx: AppContext, brandId: string, id: string): Promise<DeliveryRow> {
  return ctx.db.transact(async (trx) => {
    const row = await findDelivery(trx, brandId, id);
    if (!row) throw new NotFoundError('Delivery');
    if (row.status !== 'succeeded' && row.status !== 'failed') {
      throw new ConflictError(`Only succeeded or failed deliveries can be redelivered; this one is ${row.status}.`);
    }
    const now = ctx.clock.now();
    const changes = {
      status: 'attempting' as const,
      attempt_base: row.attempt_count,
      next_attempt_at: now,
      lease_until: null,
      lease_owner: null,
      unrecorded_sends: 0,
      updated_at: now,
    };
    await trx.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
    await announceDeliveries(ctx, trx);
    return { ...row, ...changes };
  });
}

/** Wakes dispatchers for deliveries that may have become claimable (a target resumed). */
export { announceDeliveries };
