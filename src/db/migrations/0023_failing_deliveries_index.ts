import { type Kysely, sql } from 'kysely';

/**
 * The Overview's failing subscriptions count a brand's failed and retrying deliveries of the
 * last 7 days per subscription. Through the (brand, status, id) index that meant fetching
 * every such delivery's row for its subscription, kind and time: ~12,000 random reads, 200+
 * ms, with a million deliveries. This index holds just those columns of just the failed or
 * retrying deliveries (a few percent of them), so the count reads the index alone; a delivery
 * that succeeds at once — nearly all — never enters it. The query repeats the condition
 * word for word (dashboard/deliveryQueries.ts), which is how SQLite knows the index applies; kind
 * before id makes it the planner's pick over (brand, status, id), and the status column
 * makes it covering (SQLite does not count the index's own condition as a stored column).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_failing_idx')
    .on('webhook_deliveries')
    .columns(['brand_id', 'kind', 'id', 'subscription_id', 'updated_at', 'status'])
    .where(sql.ref('status'), 'in', sql`('failed', 'retry_scheduled')`)
    .execute();
}
