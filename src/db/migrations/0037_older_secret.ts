import type { Kysely } from 'kysely';

/**
 * `webhook_subscriptions.older_secret`: a second rotation within the first's overlap made the
 * first old secret stop signing at once, though its answer had promised it until
 * `previousSecretExpiresAt`. The secret before the previous one now keeps signing until the
 * time promised for it (webhooks/service.ts, rotateSecret): three secrets at most sign a
 * delivery, and a rotation that would need a fourth is refused.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_subscriptions').addColumn('older_secret', 'text').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('older_secret_expires_at', 'bigint').execute();
}
