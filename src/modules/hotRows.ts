/**
 * The rows every click and every conversion reads — its offer, partner and brand — kept in
 * memory for the tracking link and conversion ingest: they change rarely and are never
 * served after a change has applied (db/cache.ts says how soon: at once for a change of
 * this process, at the next request for another process on SQLite, within 500 ms on
 * PostgreSQL).
 */
import type { LookupContext } from '../db/cache.js';
import { cachedLookup } from '../db/cache.js';
import { type BrandRow, findBrandById } from './brands/repository.js';
import { findOfferOfAnyBrand, type OfferRow } from './offers/repository.js';
import { findPartner, type PartnerRow } from './partners/repository.js';

const offers = cachedLookup((db, id: string) => findOfferOfAnyBrand(db.read, id));
/** Keyed by brand id and partner id joined by NUL, which no id contains (see hotPartner). */
const partners = cachedLookup((db, key: string) => {
  const [brandId = '', id = ''] = key.split('\u0000');
  return findPartner(db.read, brandId, id);
});
const brands = cachedLookup((db, id: string) => findBrandById(db.read, id));

/** An offer of any brand: the tracking link, where the offer decides the brand. */
export function hotOffer(ctx: LookupContext, id: string): Promise<OfferRow | undefined> {
  return offers.get(ctx, id);
}

export async function hotOfferOfBrand(ctx: LookupContext, brandId: string, id: string): Promise<OfferRow | undefined> {
  const offer = await offers.get(ctx, id);
  return offer?.brand_id === brandId ? offer : undefined;
}

export async function hotPartner(ctx: LookupContext, brandId: string, id: string): Promise<PartnerRow | undefined> {
  // An id with a NUL character cannot exist (and PostgreSQL cannot even compare it).
  if (brandId.includes('\u0000') || id.includes('\u0000')) return undefined;
  return partners.get(ctx, `${brandId}\u0000${id}`);
}

export function hotBrand(ctx: LookupContext, id: string): Promise<BrandRow | undefined> {
  return brands.get(ctx, id);
}
