/**
 * The few read queries only the dashboard needs (names for tables, filter menus, overview
 * counts). Every query is scoped to the session's brand. Writes always go through the
 * feature services.
 */
import { sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import type { ConversionFilter } from '../conversions/repository.js';
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
  table: 'conversions' | 'partners',
  brandId: string,
  status: 'pending' | 'applicant',
): Promise<number> {
  const row = await q
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('brand_id', '=', brandId)
    .where('status', '=', status as never)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Webhook subscriptions with failed or retrying deliveries since `sinceMs`, worst first. */
export async function failingSubscriptions(q: Queryable, brandId: string, sinceMs: number, limit: number) {
  const rows = await q
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .select((eb) => [
      's.id',
      's.url',
      's.status',
      eb.fn.countAll<number>().as('failing'),
      eb.fn.max('d.updated_at').as('last_at'),
    ])
    .where('d.brand_id', '=', brandId)
    .where('d.kind', '=', 'webhook')
    .where('d.status', 'in', ['failed', 'retry_scheduled'])
    .where('d.created_at', '>=', sinceMs)
    .groupBy(['s.id', 's.url', 's.status'])
    .orderBy('failing', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, failing: Number(r.failing), last_at: Number(r.last_at) }));
}

/** URLs of the webhook subscriptions and postback templates deliveries went to. */
export async function deliveryTargets(q: Queryable, brandId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const unique = [...new Set(ids)];
  const [subscriptions, postbacks] = await Promise.all([
    q
      .selectFrom('webhook_subscriptions')
      .select(['id', 'url'])
      .where('brand_id', '=', brandId)
      .where('id', 'in', unique)
      .execute(),
    q
      .selectFrom('partner_postbacks')
      .select(['id', 'url'])
      .where('brand_id', '=', brandId)
      .where('id', 'in', unique)
      .execute(),
  ]);
  return new Map([...subscriptions, ...postbacks].map((r) => [r.id, r.url]));
}

/** The latest sends of the given postback templates (a partner's), newest first. */
export function recentPostbackSends(q: Queryable, brandId: string, templateIds: string[], limit: number) {
  if (templateIds.length === 0) return Promise.resolve([]);
  return q
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('brand_id', '=', brandId)
    .where('kind', '=', 'postback')
    .where('subscription_id', 'in', templateIds)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The exact JSON a delivery sends (the stored event envelope). */
export async function eventPayload(q: Queryable, brandId: string, eventId: string): Promise<string | null> {
  const row = await q
    .selectFrom('events')
    .select('payload')
    .where('id', '=', eventId)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
  return row?.payload ?? null;
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

/** What a list row or detail page shows of an offer's or partner's traffic (from the rollups). */
export interface Numbers {
  clicks: number;
  conversions: number;
  revenueCents: number;
  payoutCents: number;
}

export const NO_NUMBERS: Numbers = { clicks: 0, conversions: 0, revenueCents: 0, payoutCents: 0 };

/**
 * Clicks, conversions (pending + approved), revenue and payout per offer or partner over the
 * brand-local days `from`…`to`, read from the report rollups (a few rows per day), never
 * from clicks or conversions.
 */
export async function numbersBy(
  q: Queryable,
  brandId: string,
  key: 'offer_id' | 'partner_id',
  ids: string[],
  from: string,
  to: string,
): Promise<Map<string, Numbers>> {
  if (ids.length === 0) return new Map();
  const table = key === 'offer_id' ? 'rollups_offer' : 'rollups_offer_partner';
  const rows = await sql<{ id: string; clicks: unknown; conversions: unknown; revenue: unknown; payout: unknown }>`
    select ${sql.ref(key)} as id, sum(clicks) as clicks, sum(pending + approved) as conversions,
      sum(revenue_cents) as revenue, sum(payout_cents) as payout
    from ${sql.table(table)}
    where brand_id = ${brandId} and day >= ${from} and day <= ${to}
      and ${sql.ref(key)} in (${sql.join([...new Set(ids)])})
    group by ${sql.ref(key)}`.execute(q);
  return new Map(
    rows.rows.map((r) => [
      r.id,
      {
        clicks: Number(r.clicks),
        conversions: Number(r.conversions),
        revenueCents: Number(r.revenue),
        payoutCents: Number(r.payout),
      },
    ]),
  );
}

/** Count, revenue and payout of the conversions a list filter matches, per currency. */
export async function conversionTotals(q: Queryable, brandId: string, f: Omit<ConversionFilter, 'cursor' | 'limit'>) {
  let query = q
    .selectFrom('conversions')
    .select((eb) => [
      'currency',
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('revenue_cents').as('revenue'),
      eb.fn.sum<number>('payout_cents').as('payout'),
    ])
    .where('brand_id', '=', brandId);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.offerId) query = query.where('offer_id', '=', f.offerId);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.externalTxnId) query = query.where('external_txn_id', '=', f.externalTxnId);
  if (f.fromMs !== undefined) query = query.where('created_at', '>=', f.fromMs);
  if (f.toMs !== undefined) query = query.where('created_at', '<=', f.toMs);
  const rows = await query.groupBy('currency').orderBy('currency').execute();
  return rows.map((r) => ({
    currency: r.currency,
    count: Number(r.n),
    revenueCents: Number(r.revenue),
    payoutCents: Number(r.payout),
  }));
}
