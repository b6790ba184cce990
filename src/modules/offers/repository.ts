import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import { cachedLookup, type LookupContext } from '../../db/cache.js';
import type { Queryable } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { OfferTable } from '../../db/schema.js';
import { parseMetadata } from '../metadata.js';
import type { Offer } from './schemas.js';

export type OfferRow = Selectable<OfferTable>;

export function offerToApi(row: OfferRow): Offer {
  return {
    id: row.id,
    name: row.name,
    destinationUrl: row.destination_url,
    status: row.status,
    currency: row.currency,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
    conversionStatus: row.conversion_status,
    holdSeconds: row.hold_seconds,
    caps: { daily: row.cap_daily, weekly: row.cap_weekly, monthly: row.cap_monthly, global: row.cap_global },
    fallbackUrl: row.fallback_url,
    metadata: parseMetadata(row.metadata),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** The offer with this id, only if it belongs to `brandId` (another brand's offer is "not found"). */
const offerOfBrand = prepared(2, (q, brandId: string, id: string) =>
  q.selectFrom('offers').selectAll().where('id', '=', id).where('brand_id', '=', brandId),
);
const offerById = prepared(1, (q, id: string) => q.selectFrom('offers').selectAll().where('id', '=', id));

export function findOffer(q: Queryable, brandId: string, id: string): Promise<OfferRow | undefined> {
  return offerOfBrand.first(q, brandId, id);
}

/** Any brand's offer: only for the public tracking link, where the offer decides the brand. */
export function findOfferOfAnyBrand(q: Queryable, id: string): Promise<OfferRow | undefined> {
  return offerById.first(q, id);
}

export function listOffers(
  q: Queryable,
  brandId: string,
  filter: { status?: string; cursor?: string; limit: number },
): Promise<OfferRow[]> {
  let query = q.selectFrom('offers').selectAll().where('brand_id', '=', brandId);
  if (filter.status) query = query.where('status', '=', filter.status as OfferRow['status']);
  if (filter.cursor) query = query.where('id', '<', filter.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}

type ListFilter = { status?: string; cursor?: string; limit: number };

/**
 * Pages of the brand's offers, kept in memory like the rows of db/cache.ts (a change to
 * offers applies at once in this process, within its bounds from another): integrations
 * poll this list, and it changes rarely.
 */
const offerPages = cachedLookup((db, key: string) => {
  const [brandId, filter] = JSON.parse(key) as [string, ListFilter];
  return listOffers(db.read, brandId, filter);
});

export function listOffersCached(ctx: LookupContext, brandId: string, filter: ListFilter): Promise<OfferRow[]> {
  const { status, cursor, limit } = filter;
  return offerPages.get(ctx, JSON.stringify([brandId, { status, cursor, limit }]));
}
