/**
 * Endpoint health (issue #20, point 1). The counters are written by the delivery engine's
 * batched completions (DeliveryTarget.recorded), in the transaction that records the
 * attempts: per batch, one hourly-bucket upsert and one UPDATE per subscription, never a
 * query of its own per delivery. Crossing 50 %, 75 % or 90 % of WEBHOOK_DISABLE_AFTER fires
 * `webhook.subscription.failing` once per run of failures; reaching it disables the
 * subscription and fires `webhook.subscription.disabled` (to the brand's other
 * subscriptions that chose them; webhooks/target.ts).
 */
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Config } from '../../config.js';
import type { AppContext } from '../../context.js';
import type { Queryable, Trx } from '../../db/types.js';
import { roundedRatio } from '../../ratio.js';
import { parkUnsent } from '../deliveries/service.js';
import type { RecordedOutcome } from '../deliveries/target.js';
import { recordEvent } from '../events/outbox.js';
import type { SubscriptionRow } from './repository.js';
import type { SubscriptionHealth } from './schemas.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Warnings before the automatic disable, in percent of the way there. */
const WARNING_LEVELS = [90, 75, 50] as const;
type WarningLevel = (typeof WARNING_LEVELS)[number];
/** Hourly buckets older than this are deleted: the success rate reads the last 24 h only. */
const KEEP_HOURS_MS = 48 * HOUR_MS;

type HealthColumns = Pick<
  SubscriptionRow,
  'consecutive_failures' | 'failing_since' | 'last_success_at' | 'last_failure_at'
>;

/** How far a run of failures has gone towards the automatic disable, 0–100. */
export function disableProgress(row: HealthColumns, now: number, rule: Config['webhookDisableAfter']): number {
  if (!rule || row.failing_since === null || row.consecutive_failures === 0) return 0;
  // Both must hold (every delivery failed for the whole time, and enough of them): the
  // smaller share is the progress.
  const share = Math.min(row.consecutive_failures / rule.deliveries, (now - Number(row.failing_since)) / rule.ms);
  return Math.max(0, Math.min(100, Math.floor(share * 100)));
}

function healthEventFields(row: SubscriptionRow) {
  return {
    subscriptionId: row.id,
    url: row.url,
    consecutiveFailures: row.consecutive_failures,
    failingSince: toIsoOrNull(row.failing_since === null ? null : Number(row.failing_since)),
    lastSuccessAt: toIsoOrNull(row.last_success_at === null ? null : Number(row.last_success_at)),
    lastFailureAt: toIsoOrNull(row.last_failure_at === null ? null : Number(row.last_failure_at)),
  };
}

/**
 * Disables a subscription in `trx` and fires webhook.subscription.disabled. Its new events are
 * parked from now on, with those not tried yet; retries already scheduled wait until it is enabled again.
 */
export async function disableInTransaction(
  ctx: AppContext,
  trx: Trx,
  row: SubscriptionRow,
  reason: string,
  by: 'automatic' | 'manual',
): Promise<SubscriptionRow> {
  const now = ctx.clock.now();
  const changes = { status: 'disabled' as const, disabled_at: now, disabled_reason: reason, updated_at: now };
  await trx.updateTable('webhook_subscriptions').set(changes).where('id', '=', row.id).execute();
  // What was about to go out for the first time (a replay of parked deliveries just started,
  // say) is parked again, as the events that come while it is disabled are.
  await parkUnsent(trx, 'webhook', row.id, now);
  const disabled = { ...row, ...changes };
  await recordEvent(ctx, trx, row.brand_id, 'webhook.subscription.disabled', {
    ...healthEventFields(disabled),
    status: 'disabled',
    disabledAt: toIso(now),
    disabledReason: reason,
    disabledBy: by,
  });
  return disabled;
}

function days(ms: number): number {
  return roundedRatio(ms, DAY_MS, 2);
}

/** `5 days`, `12 hours`, `90 minutes`: the rule's duration in the largest whole unit. */
export function describeDuration(ms: number): string {
  const units: Array<[number, string]> = [
    [DAY_MS, 'day'],
    [HOUR_MS, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}

/** The last hour each subscription's old buckets were swept in this process: one sweep per hour. */
const sweptHour = new Map<string, number>();

/** DeliveryTarget.recorded of webhooks: the batch's attempts, grouped by subscription. */
export async function recordHealth(ctx: AppContext, trx: Trx, outcomes: RecordedOutcome[]): Promise<void> {
  const bySubscription = new Map<string, RecordedOutcome[]>();
  for (const o of outcomes) {
    const list = bySubscription.get(o.targetId);
    if (list) list.push(o);
    else bySubscription.set(o.targetId, [o]);
  }
  // In id order, so two workers' batches never lock two subscriptions in opposite orders
  // (PostgreSQL would break such a deadlock by failing one batch).
  for (const subscriptionId of [...bySubscription.keys()].sort()) {
    await recordOne(ctx, trx, subscriptionId, bySubscription.get(subscriptionId) as RecordedOutcome[]);
  }
}

async function recordOne(ctx: AppContext, trx: Trx, subscriptionId: string, list: RecordedOutcome[]): Promise<void> {
  const hours = new Map<number, { succeeded: number; failed: number }>();
  for (const o of list) {
    const hour = Math.floor(o.attemptedAt / HOUR_MS) * HOUR_MS;
    const bucket = hours.get(hour) ?? { succeeded: 0, failed: 0 };
    if (o.succeeded) bucket.succeeded += 1;
    else bucket.failed += 1;
    hours.set(hour, bucket);
  }
  for (const [hour, bucket] of hours) {
    await trx
      .insertInto('webhook_subscription_hours')
      .values({ subscription_id: subscriptionId, hour, ...bucket })
      .onConflict((oc) =>
        oc.columns(['subscription_id', 'hour']).doUpdateSet((eb) => ({
          succeeded: eb('webhook_subscription_hours.succeeded', '+', eb.ref('excluded.succeeded')),
          failed: eb('webhook_subscription_hours.failed', '+', eb.ref('excluded.failed')),
        })),
      )
      .execute();
  }
  const latestHour = Math.max(...hours.keys());
  if (sweptHour.get(subscriptionId) !== latestHour) {
    sweptHour.set(subscriptionId, latestHour);
    await trx
      .deleteFrom('webhook_subscription_hours')
      .where('subscription_id', '=', subscriptionId)
      .where('hour', '<', latestHour - KEEP_HOURS_MS)
      .execute();
  }

  // The run of failures after the batch: a success in the batch starts it afresh from there.
  let lastSuccess = -1;
  for (const [i, o] of list.entries()) if (o.succeeded) lastSuccess = i;
  const after = list.slice(lastSuccess + 1);
  const failedAttempts = after.filter((o) => !o.succeeded).map((o) => o.attemptedAt);
  const failedDeliveries = after.filter((o) => o.deliveryFailed).length;
  const firstFailure = failedAttempts.length > 0 ? Math.min(...failedAttempts) : null;
  const allFailures = list.filter((o) => !o.succeeded).map((o) => o.attemptedAt);
  const lastFailure = allFailures.length > 0 ? Math.max(...allFailures) : null;
  const successAt = lastSuccess >= 0 ? (list[lastSuccess] as RecordedOutcome).attemptedAt : null;

  const updated = await trx
    .updateTable('webhook_subscriptions')
    .set((eb) => ({
      ...(successAt !== null
        ? {
            consecutive_failures: failedDeliveries,
            failing_since: firstFailure,
            warned_percent: 0,
            last_success_at: eb.fn.coalesce(
              eb.case().when('last_success_at', '>', successAt).then(eb.ref('last_success_at')).end(),
              eb.val(successAt),
            ),
          }
        : {
            consecutive_failures: eb('consecutive_failures', '+', failedDeliveries),
            failing_since: eb.fn.coalesce('failing_since', eb.val(firstFailure)),
          }),
      ...(lastFailure !== null
        ? {
            last_failure_at: eb.fn.coalesce(
              eb.case().when('last_failure_at', '>', lastFailure).then(eb.ref('last_failure_at')).end(),
              eb.val(lastFailure),
            ),
          }
        : {}),
    }))
    .where('id', '=', subscriptionId)
    .returningAll()
    .executeTakeFirst();
  if (updated?.status !== 'active' || failedDeliveries === 0) return;
  await warnOrDisable(ctx, trx, updated);
}

async function warnOrDisable(ctx: AppContext, trx: Trx, row: SubscriptionRow): Promise<void> {
  const rule = ctx.config.webhookDisableAfter;
  if (!rule) return;
  const progress = disableProgress(row, ctx.clock.now(), rule);
  if (progress >= 100) {
    const reason = `Every delivery failed for ${describeDuration(rule.ms)} (${row.consecutive_failures} deliveries in a row).`;
    await disableInTransaction(ctx, trx, row, reason, 'automatic');
    ctx.logger.warn({ subscriptionId: row.id }, 'webhook subscription disabled after failing deliveries');
    return;
  }
  const level = WARNING_LEVELS.find((l) => progress >= l);
  if (level === undefined || level <= row.warned_percent) return;
  await trx.updateTable('webhook_subscriptions').set({ warned_percent: level }).where('id', '=', row.id).execute();
  await recordEvent(ctx, trx, row.brand_id, 'webhook.subscription.failing', {
    ...healthEventFields(row),
    status: 'active',
    progressPercent: level,
    disableAfterDays: days(rule.ms),
    disableAfterDeliveries: rule.deliveries,
  });
}

/** Health of each subscription, read for the API and the dashboard: two queries for any number. */
export async function healthOf(
  q: Queryable,
  rows: SubscriptionRow[],
  now: number,
  rule: Config['webhookDisableAfter'],
): Promise<Map<string, SubscriptionHealth>> {
  const health = new Map<string, SubscriptionHealth>();
  if (rows.length === 0) return health;
  const ids = rows.map((r) => r.id);
  const since = Math.floor((now - DAY_MS) / HOUR_MS) * HOUR_MS + HOUR_MS;
  const [hours, parked] = await Promise.all([
    q
      .selectFrom('webhook_subscription_hours')
      .select((eb) => [
        'subscription_id',
        eb.fn.sum<number>('succeeded').as('succeeded'),
        eb.fn.sum<number>('failed').as('failed'),
      ])
      .where('subscription_id', 'in', ids)
      .where('hour', '>=', since)
      .groupBy('subscription_id')
      .execute(),
    q
      .selectFrom('webhook_deliveries')
      .select((eb) => ['subscription_id', eb.fn.countAll<number>().as('n')])
      .where('subscription_id', 'in', ids)
      .where('status', '=', 'parked')
      .groupBy('subscription_id')
      .execute(),
  ]);
  const attempts = new Map(hours.map((h) => [h.subscription_id, h]));
  const parkedBy = new Map(parked.map((p) => [p.subscription_id, Number(p.n)]));
  for (const row of rows) {
    const h = attempts.get(row.id);
    const succeeded = Number(h?.succeeded ?? 0);
    const total = succeeded + Number(h?.failed ?? 0);
    const warned = row.warned_percent as WarningLevel | 0;
    health.set(row.id, {
      successRate24h: total === 0 ? null : roundedRatio(succeeded, total, 4),
      attempts24h: total,
      consecutiveFailures: row.consecutive_failures,
      failingSince: toIsoOrNull(row.failing_since === null ? null : Number(row.failing_since)),
      lastSuccessAt: toIsoOrNull(row.last_success_at === null ? null : Number(row.last_success_at)),
      lastFailureAt: toIsoOrNull(row.last_failure_at === null ? null : Number(row.last_failure_at)),
      disableProgressPercent: disableProgress(row, now, rule),
      warning: warned === 0 ? null : warned,
      parkedDeliveries: parkedBy.get(row.id) ?? 0,
    });
  }
  return health;
}
