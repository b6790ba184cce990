import type { Kysely } from 'kysely';

/**
 * A complete delivery log and the events API (issue #20, point 7):
 * - each attempt keeps what was sent (URL, method, request headers: the signature, never the
 *   secret) and the receiver's response headers, beside the status and body it already had;
 * - test sends (POST /api/public/webhooks/:id/test) are an event and a delivery marked `test`;
 * - a deleted subscription is kept with `deleted_at` (soft delete), so its deliveries stay
 *   readable until retention removes them;
 * - an event's deliveries are read by event id (GET /api/public/events/:id), and retention
 *   asks "does this event still have deliveries?" once per event: both need an index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['request_url', 'request_method', 'request_headers', 'response_headers']) {
    await db.schema.alterTable('webhook_attempts').addColumn(column, 'text').execute();
  }
  await db.schema.alterTable('webhook_subscriptions').addColumn('deleted_at', 'bigint').execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('events')
    .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('webhook_deliveries_event_idx').on('webhook_deliveries').column('event_id').execute();
  // The events list filtered by name reads one brand's events of one type, newest first.
  await db.schema.createIndex('events_brand_type_idx').on('events').columns(['brand_id', 'type', 'id']).execute();
}
