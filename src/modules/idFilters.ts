/**
 * The one rule for lists and reports filtered by `offerId` / `partnerId` (README "Lists"): an
 * id that names no offer or partner of the brand — a typo, another brand's, a partner's id
 * given as offerId — is a mistake to report, not a filter that matches nothing. An empty
 * answer (a report of zeros) would look like a real result. Used by /conversions, /clicks,
 * /reports, /payouts, /payouts/preview and the partner API's conversions.
 *
 * Cost: one primary-key lookup per filter given (the compiled point queries of
 * offers/partners' repositories), none when the list is not filtered.
 */
import type { Queryable } from '../db/database.js';
import { InvalidError, type Problem } from '../errors.js';
import { findOffer } from './offers/repository.js';
import { findPartner } from './partners/repository.js';

export interface IdFilters {
  offerId?: string;
  partnerId?: string;
}

/** The problems of `filters` (paths `query.offerId`, `query.partnerId`); empty when each names one of the brand's. */
export async function idFilterProblems(q: Queryable, brandId: string, filters: IdFilters): Promise<Problem[]> {
  const { offerId, partnerId } = filters;
  const [offer, partner] = await Promise.all([
    offerId === undefined ? true : findOffer(q, brandId, offerId),
    partnerId === undefined ? true : findPartner(q, brandId, partnerId),
  ]);
  const problems: Problem[] = [];
  if (!offer) problems.push({ path: 'query.offerId', message: 'no offer with this id' });
  if (!partner) problems.push({ path: 'query.partnerId', message: 'no partner with this id' });
  return problems;
}

/** Throws InvalidError listing every filter that names nothing of the brand. */
export async function checkIdFilters(q: Queryable, brandId: string, filters: IdFilters): Promise<void> {
  const problems = await idFilterProblems(q, brandId, filters);
  if (problems.length > 0) throw new InvalidError(problems);
}
