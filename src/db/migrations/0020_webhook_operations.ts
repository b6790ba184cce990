import { type Kysely, sql } from 'kysely';

/**
 * Webhook operations (issue #20, points 1–5):
 * - subscription health, kept by the completions that record attempts (batched, no query of
 *   its own per delivery): the current run of failures (`consecutive_failures` counts
 *   deliveries that ended failed, `failing_since` is the first failed attempt after the last
 *   success), the last success and failure, and the highest warning already given
 *   (`warned_percent`: 0, 50, 75 or 90), so each warning fires once per run;
 * - why and when a subscription was disabled;
 * - `rate_limit_per_second` (null = unlimited) and, during a secret rotation, the previous
 *   secret with its expiry (every delivery is signed with both until then);
 * - `webhook_subscription_hours`: attempts per subscription and hour, for the success rate over
 *   the last 24 h, written with the same batched completion;
 * - `delivery_throttles`: the next free send slot of each throttled target, shared by every
 *   worker process, so a rate limit holds across processes;
 * - a manual redelivery's one attempt remembers the state to return to (`resume_status`,
 *   `resume_at`) when it fails, so the scheduled retries go on untouched;
 * - parked deliveries (status `parked`, next_attempt_at NULL) counted per subscription
 *   through a partial index that holds only them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_subscriptions')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('failing_since', 'bigint').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('last_success_at', 'bigint').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('last_failure_at', 'bigint').execute();
  await db.schema
    .alterTable('webhook_subscriptions')
    .addColumn('warned_percent', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('disabled_at', 'bigint').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('disabled_reason', 'text').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('rate_limit_per_second', 'integer').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('previous_secret', 'text').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('previous_secret_expires_at', 'bigint').execute();

  await db.schema
    .createTable('webhook_subscription_hours')
    .addColumn('subscription_id', 'text', (c) => c.notNull())
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('succeeded', 'integer', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_subscription_hours_pk', ['subscription_id', 'hour'])
    .execute();

  await db.schema
    .createTable('delivery_throttles')
    .addColumn('target_key', 'text', (c) => c.primaryKey())
    .addColumn('next_slot_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.alterTable('webhook_deliveries').addColumn('resume_status', 'text').execute();
  await db.schema.alterTable('webhook_deliveries').addColumn('resume_at', 'bigint').execute();
  await db.schema
    .createIndex('webhook_deliveries_parked_idx')
    .on('webhook_deliveries')
    .columns(['subscription_id', 'created_at', 'id'])
    .where(sql.ref('status'), '=', sql.lit('parked'))
    .execute();
}
