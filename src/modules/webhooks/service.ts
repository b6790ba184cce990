/** Webhook subscriptions: the rules of creating, changing, disabling, rotating and recovering them. */
import { randomBytes } from 'node:crypto';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { lockRowForUpdate } from '../../db/locks.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { announceDeliveries } from '../deliveries/fanout.js';
import { endDeliveriesOfRemovedTarget } from '../deliveries/removal.js';
import { finishDeliveriesOf } from '../deliveries/repository.js';
import { countReplayable, replayInOrder } from '../deliveries/service.js';
import { validateTargetUrl } from '../deliveries/targetUrl.js';
import { mergedMetadata, metadataText } from '../metadata.js';
import { disableInTransaction } from './health.js';
import { earlierSecretsOf, findSubscription, type SubscriptionRow } from './repository.js';
import type { CreateSubscriptionBody, RecoverBody, RotateSecretBody, UpdateSubscriptionBody } from './schemas.js';
import { webhookTarget } from './target.js';

// Redelivery belongs to the delivery engine; re-exported for existing users.
export { redeliver } from '../deliveries/service.js';
export { validateTargetUrl };

/** Subscriptions per brand at most: plenty for real integrations, bounded fan-out per event. */
export const MAX_SUBSCRIPTIONS_PER_BRAND = 50;
/** How long the old secret keeps signing after a rotation when the request does not say. */
export const DEFAULT_PREVIOUS_SECRET_SECONDS = 86_400;
const MANUAL_DISABLE_REASON = 'Disabled by hand.';

/** A new signing secret: 32 random bytes, shown once. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

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
        // The path names the collection that is full: no field of the body is at fault.
        { path: 'webhooks', message: `a brand can have at most ${MAX_SUBSCRIPTIONS_PER_BRAND} subscriptions` },
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
      consecutive_failures: 0,
      failing_since: null,
      last_success_at: null,
      last_failure_at: null,
      warned_percent: 0,
      disabled_at: null,
      disabled_reason: null,
      rate_limit_per_second: input.rateLimitPerSecond ?? null,
      previous_secret: null,
      previous_secret_expires_at: null,
      older_secret: null,
      older_secret_expires_at: null,
    };
    await trx.insertInto('webhook_subscriptions').values(row).execute();
    return row;
  });
}

/** Time between two replayed deliveries: the subscription's own rate limit, else WEBHOOK_REPLAY_RATE. */
function replaySpacing(ctx: AppContext, row: SubscriptionRow): number {
  return Math.ceil(1000 / (row.rate_limit_per_second ?? ctx.config.webhookReplayRatePerSecond));
}

export async function updateSubscription(
  ctx: AppContext,
  brandId: string,
  id: string,
  patch: UpdateSubscriptionBody,
): Promise<SubscriptionRow> {
  const status = patch.status === 'enabled' ? 'active' : patch.status;
  if (patch.discardParked !== undefined && status !== 'active') {
    throw InvalidError.at('discardParked', 'is allowed only with status "enabled" (or "active")');
  }
  if (patch.url !== undefined) await validateTargetUrl(ctx, patch.url);
  return ctx.db.transact(async (trx) => {
    // Metadata is merged with what is stored, status read: a concurrent PATCH must not be lost.
    await lockRowForUpdate(trx, 'webhook_subscriptions', id);
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    const now = ctx.clock.now();
    const changes: Partial<SubscriptionRow> = { updated_at: now };
    if (patch.url !== undefined) changes.url = patch.url;
    if (patch.events !== undefined) changes.events = JSON.stringify(patch.events);
    if (patch.secret !== undefined) {
      // A secret set outright replaces any rotation under way: deliveries carry this one only.
      Object.assign(changes, { secret: patch.secret, ...NO_EARLIER_SECRETS });
    }
    if (patch.rateLimitPerSecond !== undefined) changes.rate_limit_per_second = patch.rateLimitPerSecond;
    if (patch.metadata !== undefined) changes.metadata = mergedMetadata(existing.metadata, patch.metadata);
    const enabling = status === 'active' && existing.status === 'disabled';
    if (enabling) {
      // A fresh start: the old run of failures no longer counts towards disabling it again.
      Object.assign(changes, {
        status: 'active',
        disabled_at: null,
        disabled_reason: null,
        consecutive_failures: 0,
        failing_since: null,
        warned_percent: 0,
      });
    }
    await trx.updateTable('webhook_subscriptions').set(changes).where('id', '=', id).execute();
    let row: SubscriptionRow = { ...existing, ...changes };
    if (status === 'disabled' && existing.status === 'active') {
      row = await disableInTransaction(ctx, trx, row, MANUAL_DISABLE_REASON, 'manual');
    }
    if (enabling) {
      const parked = { kind: webhookTarget.kind, targetId: id, status: 'parked' as const };
      if (patch.discardParked) {
        await trx
          .deleteFrom('webhook_deliveries')
          .where('subscription_id', '=', id)
          .where('status', '=', 'parked')
          .execute();
      } else {
        await replayInOrder(ctx, trx, { ...parked, spacingMs: replaySpacing(ctx, row) });
      }
      // Deliveries that were waiting (paused) are claimable again.
      await announceDeliveries(ctx, trx);
    }
    return row;
  });
}

/**
 * Deletes a subscription softly: it is gone from the API (404, no new deliveries: it is
 * disabled too, so fan-out and sending pass it by) but its delivery log stays readable until
 * retention removes it. Deliveries still waiting end as failed; an attempt in flight is
 * recorded, and its delivery ends as that attempt says (no retry after a failure).
 */
export async function deleteSubscription(ctx: AppContext, brandId: string, id: string): Promise<void> {
  await ctx.db.transact(async (trx) => {
    // Locked before its deliveries are ended: an attempt recorded meanwhile (its health
    // update waits on this row) then sees the delete, and ends a retry it would schedule.
    await lockRowForUpdate(trx, 'webhook_subscriptions', id);
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    const now = ctx.clock.now();
    await endDeliveriesOfRemovedTarget(trx, webhookTarget.kind, id, now);
    await trx
      .updateTable('webhook_subscriptions')
      .set({ status: 'disabled', deleted_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
  });
}

/** How long after a delete its deliveries are looked at again: far beyond any lease and a dead worker's detection. */
const DELETED_RECHECK_MS = 24 * 3600 * 1000;

/**
 * Ends the deliveries a delete left to a worker's lease (an attempt in flight) whose worker
 * died before recording it: nothing claims a deleted subscription's deliveries, so they would
 * stay `attempting`. Run periodically by the worker; returns how many subscriptions it looked at.
 */
export async function finishDeliveriesOfDeleted(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const deleted = await ctx.db.read
    .selectFrom('webhook_subscriptions')
    .select('id')
    .where('deleted_at', '>', now - DELETED_RECHECK_MS)
    .execute();
  for (const { id } of deleted) {
    await ctx.db.transact((trx) => finishDeliveriesOf(trx, webhookTarget.kind, id, now));
  }
  return deleted.length;
}

const NO_EARLIER_SECRETS = {
  previous_secret: null,
  previous_secret_expires_at: null,
  older_secret: null,
  older_secret_expires_at: null,
};

/**
 * Secrets that sign one delivery at most: the current one and two earlier ones still within
 * the time their rotations promised. Enough for a rotation retried or repeated by a second
 * person within the overlap; every more secret lengthens every signature header.
 */
export const MAX_SIGNING_SECRETS = 3;

/**
 * Rotates the signing secret without downtime: the new secret signs every delivery from now
 * on, and the old one signs it too (another `v1`) until it expires, so a receiver can switch
 * secrets whenever it likes within that time. A rotation within an earlier one's overlap
 * keeps the earlier old secret signing until the time promised for it: a receiver still on
 * it must not start failing. When that would take more than MAX_SIGNING_SECRETS, the
 * rotation is refused (409) rather than break a promise: waiting for the earliest expiry,
 * or setting the secret outright (PATCH), which ends every rotation, is the brand's choice.
 */
export async function rotateSecret(
  ctx: AppContext,
  brandId: string,
  id: string,
  input: RotateSecretBody,
): Promise<{ row: SubscriptionRow; secret: string; previousSecretExpiresAt: number | null }> {
  const secret = input.secret ?? generateSecret();
  const overlapMs = (input.previousSecretExpiresIn ?? DEFAULT_PREVIOUS_SECRET_SECONDS) * 1000;
  return ctx.db.transact(async (trx) => {
    // The current secret becomes the previous one: two rotations at once must not both keep it.
    await lockRowForUpdate(trx, 'webhook_subscriptions', id);
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    if (existing.secret === secret) throw InvalidError.at('secret', 'must differ from the current secret');
    const now = ctx.clock.now();
    // Newest first; an earlier secret whose time has passed signs nothing and is dropped.
    const earlier = earlierSecretsOf(existing).filter((e) => e.expiresAt > now);
    const retired =
      existing.secret !== null && overlapMs > 0 ? { secret: existing.secret, expiresAt: now + overlapMs } : null;
    const kept = retired ? [retired, ...earlier] : earlier;
    if (kept.length > MAX_SIGNING_SECRETS - 1) {
      const until = toIso(Math.min(...earlier.map((e) => e.expiresAt)));
      throw new ConflictError(
        `${MAX_SIGNING_SECRETS} secrets sign deliveries at most, and the current secret and two earlier ones ` +
          `already do: an earlier one was promised until ${until}. Rotate again after then, or rotate with ` +
          'previousSecretExpiresIn 0 (the current secret stops signing at once), or set the secret outright ' +
          'with PATCH /api/public/webhooks/:id {"secret"}, which ends every rotation.',
      );
    }
    const [previous, older] = kept;
    const changes = {
      secret,
      previous_secret: previous?.secret ?? null,
      previous_secret_expires_at: previous?.expiresAt ?? null,
      older_secret: older?.secret ?? null,
      older_secret_expires_at: older?.expiresAt ?? null,
      updated_at: now,
    };
    await trx.updateTable('webhook_subscriptions').set(changes).where('id', '=', id).execute();
    return { row: { ...existing, ...changes }, secret, previousSecretExpiresAt: retired?.expiresAt ?? null };
  });
}

/**
 * Resends every failed delivery of a subscription created in [since, until): each gets a fresh
 * attempt sequence with the same wh_/evt_ ids and bytes, due one after another in order of
 * creation (throttled like a replay of parked deliveries). A dry run only counts.
 */
export async function recoverDeliveries(
  ctx: AppContext,
  brandId: string,
  id: string,
  input: RecoverBody,
): Promise<{ since: number; until: number; dryRun: boolean; deliveries: number }> {
  const now = ctx.clock.now();
  const since = Date.parse(input.since);
  const until = input.until === undefined ? now : Date.parse(input.until);
  if (!(until > since)) throw InvalidError.at('until', 'must be after since');
  if (since > now) throw InvalidError.at('since', 'must not be in the future');
  const dryRun = input.dryRun ?? false;
  return ctx.db.transact(async (trx) => {
    const existing = await findSubscription(trx, brandId, id);
    if (!existing) throw new NotFoundError('Subscription');
    const options = {
      kind: webhookTarget.kind,
      targetId: id,
      status: 'failed' as const,
      createdFrom: since,
      createdBefore: until,
    };
    if (dryRun) return { since, until, dryRun, deliveries: await countReplayable(trx, options) };
    if (existing.status === 'disabled') {
      throw new ConflictError('The subscription is disabled: enable it before recovering its deliveries.');
    }
    const deliveries = await replayInOrder(ctx, trx, { ...options, spacingMs: replaySpacing(ctx, existing) });
    return { since, until, dryRun, deliveries };
  });
}
