/**
 * The few read queries only the dashboard needs: names for tables, filter menus, counts by
 * status, recent clicks, the partner search. The delivery log's reads are in
 * deliveryQueries.ts, traffic and money figures in trafficQueries.ts. Every query is scoped
 * to the session's brand. Writes always go through the feature services.
 */
import { sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import type { ClickRow } from '../clicks/repository.js';
import type { PartnerRow } from '../partners/repository.js';

/** Entries in a filter menu at most; beyond that an id can be typed instead. */
export const MENU_LIMIT = 200;

export async function offerNames(q: Queryable, brandId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await q
    .selectFrom('offers')
    .select(['id', 'name'])
    .where('brand_id', '=', brandId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function partnerNames(q: Queryable, brandId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await q
    .selectFrom('partners')
    .select(['id', 'name'])
    .where('brand_id', '=', brandId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** The names of one click's or conversion's offer and partner, for its page's links. */
export async function linkNames(q: Queryable, brandId: string, row: { offer_id: string; partner_id: string }) {
  const [offers, partners] = await Promise.all([
    offerNames(q, brandId, [row.offer_id]),
    partnerNames(q, brandId, [row.partner_id]),
  ]);
  return { offer: offers.get(row.offer_id) ?? row.offer_id, partner: partners.get(row.partner_id) ?? row.partner_id };
}

export function offerMenu(q: Queryable, brandId: string) {
  return q
    .selectFrom('offers')
    .select(['id', 'name'])
    .where('brand_id', '=', brandId)
    .orderBy('id', 'desc')
    .limit(MENU_LIMIT)
    .execute();
}

export function partnerMenu(q: Queryable, brandId: string) {
  return q
    .selectFrom('partners')
    .select(['id', 'name'])
    .where('brand_id', '=', brandId)
    .orderBy('id', 'desc')
    .limit(MENU_LIMIT)
    .execute();
}

export async function countByStatus(
  q: Queryable,
  table: 'partners',
  brandId: string,
  status: 'applicant',
): Promise<number> {
  const row = await q
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('brand_id', '=', brandId)
    .where('status', '=', status)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Recent clicks, high-risk ones only when asked (a literal, so the partial index applies). */
export function recentClicks(
  q: Queryable,
  brandId: string,
  f: { offerId?: string; partnerId?: string; highRisk?: boolean; cursor?: string; limit: number },
): Promise<ClickRow[]> {
  let query = q.selectFrom('clicks').selectAll().where('brand_id', '=', brandId);
  if (f.highRisk) query = query.where(sql<boolean>`high_risk = 1`);
  if (f.offerId) query = query.where('offer_id', '=', f.offerId);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

/** `%term%` for LIKE, with the pattern characters of the term taken literally. */
function likePattern(term: string): string {
  return `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Partners by status and a search of name, email (contains, any case) or exact id; newest first. */
export function searchPartners(
  q: Queryable,
  brandId: string,
  f: { status?: PartnerRow['status']; search?: string; cursor?: string; limit: number },
): Promise<PartnerRow[]> {
  let query = q.selectFrom('partners').selectAll().where('brand_id', '=', brandId);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.search) {
    const like = likePattern(f.search);
    query = query.where((eb) =>
      eb.or([
        eb('id', '=', f.search ?? ''),
        sql<boolean>`lower(name) like ${like} escape '\\'`,
        sql<boolean>`lower(email) like ${like} escape '\\'`,
      ]),
    );
  }
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}
