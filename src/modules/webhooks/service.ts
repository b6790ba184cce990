/** Webhook subscriptions: the rules of creating, changing and deleting them. */
import type { AppContext } from '../../context.js';
import { InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { announceDeliveries } from '../deliveries/fanout.js';
import { finishDeliveriesOf } from '../deliveries/repository.js';
import { validateTargetUrl } from '../deliveries/targetUrl.js';
import { mergedMetadata, metadataText } from '../metadata.js';
import { findSubscription, type SubscriptionRow } from './repository.js';
import type { CreateSubscriptionBody, UpdateSubscriptionBody } from './schemas.js';
import { webhookTarget } from './target.js';

// Redelivery belongs to the delivery engine; re-exported for existing users.
export { redeliver } from '../deliveries/service.js';
export { validateTargetUrl };

/** Subscriptions per brand at most: plenty for real integrations, bounded fan-out per event. */
export const MAX_SUBSCRIPTIONS_PER_BRAND = 50;

export async function createSubscription(
  ctx: AppContext,
  brandId: string,
  input: CreateSubscriptionBody,
): Promise<SubscriptionRow> {
  await validateTargetUrl(ctx, input.url);
  return ctx.db.transact(async (trx) => {
    // Count-then-insert is exact only if concurrent creations for the brand queue up: on
    // PostgreSQL lock the brand's row first (SQLite's write transaction already excludes
    // every other writer). NO KEY UPDATE: rows referencing the brand are not held up.
    if (ctx.db.dialect === 'postgres') {
      await trx.selectFrom('brands').select('id').where('id', '=', brandId).forNoKeyUpdate().execute();
    }
    const count = await trx
      .selectFrom('webhook_subscriptions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('brand_id', '=', brandId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_SUBSCRIPTIONS_PER_BRAND) {
      throw new InvalidError([
        { path: '', message: `a brand can have at most ${MAX_SUBSCRIPTIONS_PER_BRAND} subscriptions` },
      ]);
    }
    const now = ctx.clock.now();
    const row: SubscriptionRow = {
      id: newId('sub', now),
      brand_id: brandId,
      url: input.url,
      events: JSON.stringify(input.events),
      secret: input.secret ?? null,
      status: 'active',
      created_at: now,
      updated_at: now,
      metadata: metadataText(input.metadata),
      deleted_at: null,
    };
    await trx.insertInto('webhook_subscriptions').values(row).execute();
    return row;
  });
}

export async function updateSubscription(
  ctx: AppContext,
  brandId: string,
  id: string,
  patch: UpdateSubscriptionBody,
): Promise<SubscriptionRow> {
  if (patch.url !== undefined) await validateTargetUrl(ctx, patch.url);
  return ctx.db.transact(async (trx) => {
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    const changes: Partial<SubscriptionRow> = { updated_at: ctx.clock.now() };
    if (patch.url !== undefined) changes.url = patch.url;
    if (patch.events !== undefined) changes.events = JSON.stringify(patch.events);
    if (patch.secret !== undefined) changes.secret = patch.secret;
    if (patch.status !== undefined) changes.status = patch.status;
    if (patch.metadata !== undefined) changes.metadata = mergedMetadata(existing.metadata, patch.metadata);
    await trx.updateTable('webhook_subscriptions').set(changes).where('id', '=', id).execute();
    // Re-enabling may make waiting deliveries claimable again.
    if (patch.status === 'active') await announceDeliveries(ctx, trx);
    return { ...existing, ...changes };
  });
}

/**
 * Deletes a subscription softly: it is gone from the API (404, no new deliveries: it is
 * disabled too, so fan-out and sending pass it by) but its delivery log stays readable until
 * retention removes it. Deliveries still waiting end as failed.
 */
export async function deleteSubscription(ctx: AppContext, brandId: string, id: string): Promise<void> {
  await ctx.db.transact(async (trx) => {
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    const now = ctx.clock.now();
    await finishDeliveriesOf(trx, webhookTarget.kind, id, now);
    await trx
      .updateTable('webhook_subscriptions')
      .set({ status: 'disabled', deleted_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
  });
}
