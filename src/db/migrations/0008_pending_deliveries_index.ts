import { type Kysely, sql } from 'kysely';

/**
 * Unfinished deliveries by subscription, due time first. Partial (finished deliveries have
 * next_attempt_at NULL), so it stays as small as the backlog; the dispatcher walks it per
 * subscription, so one receiver's backlog is never scanned to find another's due work.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_pending_idx')
    .on('webhook_deliveries')
    .columns(['subscription_id', 'next_attempt_at'])
    .where(sql.ref('next_attempt_at'), 'is not', null)
    .execute();
}
