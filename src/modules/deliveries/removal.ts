/**
 * A target removed for good (a webhook subscription or a partner's postback URL deleted):
 * the engine's one way to end what was queued for it, whatever its kind. Its waiting
 * deliveries, scheduled or parked, end `failed` at once; an attempt in flight is recorded as
 * its outcome says, and a retry it would schedule ends `failed` instead (failRetriesOfRemoved,
 * in the transaction that records it); a redelivery is refused (service.ts, redeliver).
 * The target kind says which of its targets are gone (DeliveryTarget.removed).
 */
import { PostgresAdapter } from 'kysely';
import type { Queryable, Trx } from '../../db/types.js';
import { finishDeliveriesOf } from './repository.js';
import { type DeliveryTarget, type RecordedOutcome, targetKey } from './target.js';

/**
 * Ends the target's waiting deliveries, in the transaction that removes it. On PostgreSQL the
 * target's deliveries being sent are locked first: a completion recording one of them
 * meanwhile (its UPDATE holds the row) is waited for, so either its retry is already written
 * and ended here, or it is written after this commits and sees the target gone.
 */
export async function endDeliveriesOfRemovedTarget(
  trx: Trx,
  kind: string,
  targetId: string,
  now: number,
): Promise<void> {
  if (trx.getExecutor().adapter instanceof PostgresAdapter) {
    await trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('subscription_id', '=', targetId)
      .where('kind', '=', kind)
      .where('status', '=', 'attempting')
      .forUpdate()
      .execute();
  }
  await finishDeliveriesOf(trx, kind, targetId, now);
  await trx.deleteFrom('delivery_throttles').where('target_key', '=', targetKey(kind, targetId)).execute();
}

/**
 * Attempts just recorded whose target was removed while they were in flight: a retry they
 * scheduled ends `failed`, as nothing may be sent to the target again. One query per kind
 * and completion batch with failures, none without.
 */
export async function failRetriesOfRemoved(
  trx: Trx,
  target: DeliveryTarget,
  outcomes: readonly RecordedOutcome[],
  now: number,
): Promise<void> {
  const failed = outcomes.filter((o) => !o.succeeded && !o.deliveryFailed);
  if (failed.length === 0 || !target.removed) return;
  const removed = await target.removed(trx, [...new Set(failed.map((o) => o.targetId))]);
  const ids = failed.filter((o) => removed.has(o.targetId)).map((o) => o.deliveryId);
  if (ids.length === 0) return;
  await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, updated_at: now })
    .where('id', 'in', ids)
    .where('status', '=', 'retry_scheduled')
    .execute();
}

/** Of `targetIds`, those the kind says were removed (none for a kind that never removes). */
export async function removedTargets(q: Queryable, target: DeliveryTarget, targetIds: string[]): Promise<Set<string>> {
  return target.removed ? target.removed(q, targetIds) : new Set();
}
