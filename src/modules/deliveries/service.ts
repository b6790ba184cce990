/** The delivery log's writes: redelivery, and replaying a target's deliveries in order. */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/types.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { announceDeliveries } from './fanout.js';
import { removedTargets } from './removal.js';
import { type DeliveryRow, findDelivery } from './repository.js';

/**
 * Stripe's "resend": exactly one attempt, now, with the same delivery id, event and body —
 * for a finished delivery or one waiting for its next retry. If it fails, the delivery
 * returns to where it was (a waiting retry still comes due on schedule, a failed one stays
 * failed) and the attempt does not use up one of the schedule's attempts; the attempt
 * numbers in the log go on. A delivery being sent, or parked, cannot be redelivered.
 */
export async function redeliver(ctx: AppContext, brandId: string, id: string): Promise<DeliveryRow> {
  return ctx.db.transact(async (trx) => {
    const row = await findDelivery(trx, brandId, id);
    if (!row) throw new NotFoundError('Delivery');
    // A receiver must never get the catalogue's example conversion again as if it were news.
    if (row.test === 1) throw new ConflictError('A test send is never sent again: send a new test event instead.');
    if (row.status !== 'succeeded' && row.status !== 'failed' && row.status !== 'retry_scheduled') {
      throw new ConflictError(
        row.status === 'parked'
          ? 'This delivery is parked: enable its subscription to send it.'
          : 'This delivery is being sent now; redeliver it once the attempt is recorded.',
      );
    }
    const target = ctx.deliveries.targets.get(row.kind);
    if (
      !target ||
      !(await target.details(trx, [row.subscription_id])).has(row.subscription_id) ||
      (await removedTargets(trx, target, [row.subscription_id])).has(row.subscription_id)
    ) {
      const reason = await target?.pausedReason?.(trx, row.subscription_id);
      throw new ConflictError(reason ?? 'Its target is paused or was deleted: it is sent nothing now.');
    }
    const now = ctx.clock.now();
    const changes = {
      status: 'attempting' as const,
      resume_status: row.status,
      resume_at: row.next_attempt_at,
      next_attempt_at: now,
      lease_until: null,
      lease_owner: null,
      unrecorded_sends: 0,
      updated_at: now,
    };
    // Only from the state just read: on PostgreSQL a worker may have claimed the retry since.
    const result = await trx
      .updateTable('webhook_deliveries')
      .set(changes)
      .where('id', '=', id)
      .where('status', '=', row.status)
      .where('lease_owner', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw new ConflictError('This delivery is being sent now.');
    await announceDeliveries(ctx, trx);
    return { ...row, ...changes };
  });
}

export interface ReplayOptions {
  kind: string;
  targetId: string;
  /** The deliveries to replay: `parked` ones, or `failed` ones (recovery). */
  status: 'parked' | 'failed';
  createdFrom?: number;
  createdBefore?: number;
  /** Time between two replayed deliveries' due times, so a backlog is sent throttled. */
  spacingMs: number;
}

/**
 * Schedules a target's parked or failed deliveries again, each a fresh attempt sequence
 * (same wh_ id, evt_ id and bytes), due one after another in order of creation, `spacingMs`
 * apart. Test sends are never replayed. One statement however many there are; returns how many.
 */
export async function replayInOrder(ctx: AppContext, trx: Trx, options: ReplayOptions): Promise<number> {
  const now = ctx.clock.now();
  let chosen = trx
    .selectFrom('webhook_deliveries')
    .select(['id', sql<number>`row_number() over (order by created_at, id)`.as('n')])
    .where('kind', '=', options.kind)
    .where('subscription_id', '=', options.targetId)
    .where('status', '=', options.status)
    .where('test', '=', 0);
  if (options.createdFrom !== undefined) chosen = chosen.where('created_at', '>=', options.createdFrom);
  if (options.createdBefore !== undefined) chosen = chosen.where('created_at', '<', options.createdBefore);
  const result = await trx
    .updateTable('webhook_deliveries')
    .from(chosen.as('o'))
    .set((eb) => ({
      status: 'attempting',
      attempt_base: eb.ref('webhook_deliveries.attempt_count'),
      next_attempt_at: sql<number>`cast(${now} as bigint) + (o.n - 1) * cast(${options.spacingMs} as bigint)`,
      lease_until: null,
      lease_owner: null,
      unrecorded_sends: 0,
      resume_status: null,
      resume_at: null,
      updated_at: now,
    }))
    .whereRef('webhook_deliveries.id', '=', 'o.id')
    .executeTakeFirst();
  const count = Number(result.numUpdatedRows);
  if (count > 0) await announceDeliveries(ctx, trx);
  return count;
}

/**
 * Parks a target's deliveries that are due but not tried yet in their current sequence (new
 * ones, or parked or failed ones just replayed), when the target is paused: they are then
 * counted, listed and discardable as parked, and sent in order when it resumes. Retries wait
 * as they are (`retry_scheduled`); a delivery leased for sending or being redelivered is left
 * to its attempt.
 */
export async function parkUnsent(trx: Trx, kind: string, targetId: string, now: number): Promise<number> {
  const result = await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'parked', next_attempt_at: null, updated_at: now })
    .where('kind', '=', kind)
    .where('subscription_id', '=', targetId)
    .where('status', '=', 'attempting')
    .where('lease_owner', 'is', null)
    .where('resume_status', 'is', null)
    .where('test', '=', 0)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Counts what replayInOrder would schedule (a dry run). */
export async function countReplayable(trx: Trx, options: Omit<ReplayOptions, 'spacingMs'>): Promise<number> {
  let query = trx
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('kind', '=', options.kind)
    .where('subscription_id', '=', options.targetId)
    .where('status', '=', options.status)
    .where('test', '=', 0);
  if (options.createdFrom !== undefined) query = query.where('created_at', '>=', options.createdFrom);
  if (options.createdBefore !== undefined) query = query.where('created_at', '<', options.createdBefore);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** Wakes dispatchers for deliveries that may have become claimable (a target resumed). */
export { announceDeliveries };
