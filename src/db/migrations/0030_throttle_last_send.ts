import type { Kysely } from 'kysely';

/**
 * `delivery_throttles.last_send_at`: when a send to the throttled target last started, in any
 * worker process. Send slots are handed out at claim time, but a worker whose event loop or
 * send slots are busy starts some sends late, and two workers' late sends then went out
 * together (34 sends in one second at a limit of 20). Every send now first takes its start
 * here, only when a whole interval has passed since the last one (throttle.ts, takeSendStart).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('delivery_throttles').addColumn('last_send_at', 'bigint').execute();
}
