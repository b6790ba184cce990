import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { WebhookSubscriptionTable } from '../../db/schema.js';
import type { Queryable } from '../../db/types.js';
import { parseMetadata } from '../metadata.js';
import type { Subscription, SubscriptionHealth } from './schemas.js';

// The delivery log lives in the delivery engine; re-exported for existing users.
export {
  type AttemptRow,
  attemptToApi,
  type DeliveryRow,
  deliveryToApi,
  findDelivery,
  listAttempts,
  listDeliveries,
} from '../deliveries/repository.js';

export type SubscriptionRow = Selectable<WebhookSubscriptionTable>;

/** A subscription's sending columns, as stored. */
export type SigningColumns = Pick<
  SubscriptionRow,
  | 'url'
  | 'secret'
  | 'previous_secret'
  | 'previous_secret_expires_at'
  | 'older_secret'
  | 'older_secret_expires_at'
  | 'rate_limit_per_second'
>;

/**
 * The earlier secrets a subscription keeps from its rotations, newest first, each with the
 * time its rotation promised it until (PostgreSQL returns a bigint as text: Number).
 */
export function earlierSecretsOf(row: SigningColumns): Array<{ secret: string; expiresAt: number }> {
  const earlier: Array<{ secret: string; expiresAt: number }> = [];
  if (row.previous_secret !== null && row.previous_secret_expires_at !== null) {
    earlier.push({ secret: row.previous_secret, expiresAt: Number(row.previous_secret_expires_at) });
  }
  if (row.older_secret !== null && row.older_secret_expires_at !== null) {
    earlier.push({ secret: row.older_secret, expiresAt: Number(row.older_secret_expires_at) });
  }
  return earlier;
}

/** Until when an earlier secret signs beside the current one (the later of two), or null. */
export function earlierSecretsSignUntil(row: SigningColumns): number | null {
  const times = earlierSecretsOf(row).map((e) => e.expiresAt);
  return times.length === 0 ? null : Math.max(...times);
}

/** A subscription as the API shows it; its health is read beside it (health.ts, healthOf). */
export function subscriptionToApi(row: SubscriptionRow, health: SubscriptionHealth): Subscription {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    hasSecret: row.secret !== null,
    status: row.status,
    disabledAt: toIsoOrNull(row.disabled_at),
    disabledReason: row.disabled_reason,
    rateLimitPerSecond: row.rate_limit_per_second,
    previousSecretExpiresAt: toIsoOrNull(earlierSecretsSignUntil(row)),
    health,
    metadata: parseMetadata(row.metadata),
    createdAt: toIso(row.created_at),
  };
}

/** A subscription of the brand; a deleted one only with `includeDeleted` (its log stays readable). */
export function findSubscription(
  q: Queryable,
  brandId: string,
  id: string,
  { includeDeleted = false }: { includeDeleted?: boolean } = {},
): Promise<SubscriptionRow | undefined> {
  let query = q.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id).where('brand_id', '=', brandId);
  if (!includeDeleted) query = query.where('deleted_at', 'is', null);
  return query.executeTakeFirst();
}

export function listSubscriptions(
  q: Queryable,
  brandId: string,
  page: { cursor?: string; limit: number },
): Promise<SubscriptionRow[]> {
  let query = q
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('brand_id', '=', brandId)
    .where('deleted_at', 'is', null);
  if (page.cursor) query = query.where('id', '<', page.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}
