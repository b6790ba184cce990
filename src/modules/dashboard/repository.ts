/**
 * The few read queries only the dashboard needs (names for tables, filter menus, overview
 * counts). Every query is scoped to the session's brand. Writes always go through the
 * feature services.
 */
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/database.js';
import { idAt, timeOfId } from '../../ids.js';
import { DAY_SPAN, LEVEL_OFFER_PARTNER, LEVEL_PARTNER, rollupsReadBy } from '../analytics/grains.js';
import { readReportSums, type SumsRow } from '../analytics/reportQuery.js';
import type { ClickRow } from '../clicks/repository.js';
import type { ConversionFilter } from '../conversions/repository.js';
import { announceDeliveries } from '../deliveries/fanout.js';
import type { PartnerRow } from '../partners/repository.js';
import type { AttemptRow, DeliveryRow } from '../webhooks/repository.js';

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

/**
 * Webhook subscriptions with failed or retrying deliveries since `sinceMs`, worst first.
 * The time bound is on the id (ids sort by creation time), and the partial index of failing
 * deliveries (migration 0023) covers the query, so it reads only the recent failing entries
 * of that index, never a brand's deliveries.
 */
export async function failingSubscriptions(q: Queryable, brandId: string, sinceMs: number, limit: number) {
  // Counted per subscription first, from the index alone; only the few subscriptions are joined.
  const failing = q
    .selectFrom('webhook_deliveries')
    .select((eb) => ['subscription_id', eb.fn.countAll<number>().as('failing'), eb.fn.max('updated_at').as('last_at')])
    .where('brand_id', '=', brandId)
    // Literal, as in the partial index of migration 0023 (which then holds every column read).
    .where(sql<boolean>`status in ('failed', 'retry_scheduled')`)
    .where('id', '>=', idAt('wh', sinceMs))
    .where('kind', '=', 'webhook')
    .groupBy('subscription_id');
  const rows = await q
    .selectFrom(failing.as('f'))
    .innerJoin('webhook_subscriptions as s', 's.id', 'f.subscription_id')
    .select(['s.id', 's.url', 's.status', 'f.failing', 'f.last_at'])
    .where('s.deleted_at', 'is', null)
    .orderBy('f.failing', 'desc')
    .orderBy('s.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, failing: Number(r.failing), last_at: Number(r.last_at) }));
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

export interface DeliveryLogFilter {
  status?: DeliveryRow['status'];
  kind?: DeliveryRow['kind'];
  event?: string;
  /** Subscription or postback template ids (a partner's templates). */
  targets?: string[];
  /** Delivery ids (a search: a `wh_` id, or the deliveries of an event or a conversion). */
  ids?: string[];
  fromMs?: number;
  toMs?: number;
  cursor?: string;
  limit: number;
}

/** The delivery log, newest first; date bounds are id bounds (ids sort by time). */
export function deliveryLog(q: Queryable, brandId: string, f: DeliveryLogFilter): Promise<DeliveryRow[]> {
  let query = q.selectFrom('webhook_deliveries').selectAll().where('brand_id', '=', brandId);
  if (f.ids) query = query.where('id', 'in', f.ids.length > 0 ? f.ids : ['']);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.kind) query = query.where('kind', '=', f.kind);
  if (f.event) query = query.where('event', '=', f.event);
  if (f.targets) query = query.where('subscription_id', 'in', f.targets.length > 0 ? f.targets : ['']);
  if (f.fromMs !== undefined) query = query.where('id', '>=', idAt('wh', f.fromMs));
  if (f.toMs !== undefined) query = query.where('id', '<', idAt('wh', f.toMs));
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

/**
 * The ids of the deliveries of some events (a search), read through the event index alone: a
 * handful of rows. Combined with the brand in one query, the planner may walk the brand's
 * whole log in id order instead.
 */
export async function deliveriesOfEvents(q: Queryable, eventIds: string[]): Promise<string[]> {
  if (eventIds.length === 0) return [];
  const rows = await q.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', eventIds).execute();
  return rows.map((r) => r.id);
}

/** The last attempt of each delivery (status code, latency, error for the log's rows). */
export async function lastAttempts(q: Queryable, deliveries: DeliveryRow[]): Promise<Map<string, AttemptRow>> {
  const tried = deliveries.filter((d) => d.attempt_count > 0);
  if (tried.length === 0) return new Map();
  const rows = await q
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      tried.map((d) => d.id),
    )
    .execute();
  const last = new Map<string, AttemptRow>();
  for (const a of rows) if ((last.get(a.delivery_id)?.number ?? -1) < a.number) last.set(a.delivery_id, a);
  return last;
}

/**
 * How far an event's id can be from the change that made it: both are written in one
 * transaction, milliseconds apart (and an id's time part only ever runs ahead of the clock,
 * never behind). Generous, so a slow transaction never hides one; still a few index entries,
 * not the brand's whole outbox.
 */
const SAME_TRANSACTION_MS = 10 * 60_000;

/**
 * Events of a conversion (a search by conversion id). Its events are written with its
 * changes: `conversion.created` with the conversion itself, `conversion.approved` or
 * `.rejected` when it was decided. Ids sort by time, so each is looked for in a short id range
 * from the moment of its change: a handful of events, however many the brand has.
 */
export async function conversionEventIds(q: Queryable, brandId: string, conversionId: string): Promise<string[]> {
  const conversion = await q
    .selectFrom('conversions')
    .select(['created_at', 'approved_at', 'rejected_at'])
    .where('id', '=', conversionId)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
  if (!conversion) return [];
  const moments = [
    timeOfId(conversionId) ?? conversion.created_at,
    conversion.approved_at,
    conversion.rejected_at,
  ].filter((t): t is number => t !== null);
  const rows = await q
    .selectFrom('events')
    .select('id')
    .where('brand_id', '=', brandId)
    .where((eb) =>
      eb.or(
        moments.map((t) =>
          eb.and([eb('id', '>=', idAt('evt', Number(t))), eb('id', '<', idAt('evt', Number(t) + SAME_TRANSACTION_MS))]),
        ),
      ),
    )
    .where('type', 'like', 'conversion.%')
    .where('payload', 'like', `%"conversionId":"${conversionId.replace(/[^A-Za-z0-9_]/g, '')}"%`)
    .limit(100)
    .execute();
  return rows.map((r) => r.id);
}

/** Brings a retrying delivery's next attempt forward to now; false when it is not retrying. */
export async function retryNow(ctx: AppContext, brandId: string, id: string): Promise<boolean> {
  return ctx.db.transact(async (trx) => {
    const result = await trx
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: ctx.clock.now() })
      .where('id', '=', id)
      .where('brand_id', '=', brandId)
      .where('status', '=', 'retry_scheduled')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await announceDeliveries(ctx, trx);
    return true;
  });
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
  /** Money per currency, never added across currencies; clicks count in their offer's currency. */
  money: CurrencyNumbers[];
}

export interface CurrencyNumbers {
  currency: string;
  clicks: number;
  revenueCents: number;
  payoutCents: number;
}

export const NO_NUMBERS: Numbers = Object.freeze({ clicks: 0, conversions: 0, money: [] });

/**
 * Clicks, conversions (pending + approved), and revenue and payout per currency, per offer or
 * partner over the brand-local days `from`…`to`, read from the report rollups
 * (analytics/reportQuery.ts: a few rows per day), never from clicks or conversions.
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
  const sums: Array<Omit<SumsRow, 'attributes' | 'rejected'>> =
    key === 'partner_id'
      ? // One partner per statement: with a list, the planner reads every partner's rows of
        // the days instead of each one's through the index.
        (await Promise.all([...new Set(ids)].map((id) => partnerSums(q, brandId, [id], from, to)))).flat()
      : await readReportSums(q, {
          brandId,
          from,
          to,
          byDay: false,
          byOffer: true,
          byPartner: false,
          attributes: [],
          filters: {},
        });
  const wanted = new Set(ids);
  const numbers = new Map<string, Numbers>();
  for (const row of sums) {
    const id = (key === 'offer_id' ? row.offerId : row.partnerId) ?? '';
    if (!wanted.has(id)) continue;
    const n = numbers.get(id) ?? { clicks: 0, conversions: 0, money: [] };
    n.clicks += row.clicks;
    n.conversions += row.pending + row.approved;
    let money = n.money.find((m) => m.currency === row.currency);
    if (!money) {
      money = { currency: row.currency, clicks: 0, revenueCents: 0, payoutCents: 0 };
      n.money.push(money);
      n.money.sort((a, b) => a.currency.localeCompare(b.currency));
    }
    money.clicks += row.clicks;
    money.revenueCents += row.revenue;
    money.payoutCents += row.payout;
    numbers.set(id, n);
  }
  return numbers;
}

interface PartnerSums {
  partnerId: string;
  currency: string;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue: number;
  payout: number;
}

/**
 * The report sums of some partners (a page of the list, or one), per currency: their own
 * rollup rows without attribute — per partner (level 3), or per offer and partner (level 2)
 * for one offer — found through the rollups' partner index (migration 0026), plus their
 * facts not folded yet, in one statement, so a fold committing meanwhile neither drops nor
 * doubles any. A report's `partnerId` filter would read every partner's rows of the days.
 */
async function partnerSums(
  q: Queryable,
  brandId: string,
  partnerIds: string[],
  from: string,
  to: string,
  offerId?: string,
): Promise<PartnerSums[]> {
  const conditions = [
    sql`brand_id = ${brandId}`,
    sql`partner_id in (${sql.join(partnerIds)})`,
    sql`day >= ${from}`,
    sql`day <= ${to}`,
  ];
  if (offerId !== undefined) conditions.push(sql`offer_id = ${offerId}`);
  const range = sql.join(conditions, sql` and `);
  const { rows } = await sql<Record<string, string | number>>`
    select partner_id, currency, sum(clicks) as clicks, sum(pending) as pending, sum(approved) as approved,
      sum(rejected) as rejected, sum(revenue_cents) as revenue, sum(payout_cents) as payout
    from (
      select partner_id, currency, clicks, pending, approved, rejected, revenue_cents, payout_cents
      from ${rollupsReadBy(q, 'partner_id')}
      where dimension = '' and level = ${offerId === undefined ? LEVEL_PARTNER : LEVEL_OFFER_PARTNER} and span = ${DAY_SPAN}
        and ${range}
      union all
      select partner_id, currency, clicks, pending, approved, rejected, revenue_cents, payout_cents
      from analytics_facts where folded = 0 and ${range}
    ) as sums
    group by partner_id, currency`.execute(q);
  return rows.map((r) => ({
    partnerId: String(r.partner_id),
    currency: String(r.currency),
    clicks: Number(r.clicks ?? 0),
    pending: Number(r.pending ?? 0),
    approved: Number(r.approved ?? 0),
    rejected: Number(r.rejected ?? 0),
    revenue: Number(r.revenue ?? 0),
    payout: Number(r.payout ?? 0),
  }));
}

/** Every day there is: the bounds of a range that leaves out none. */
const FIRST_DAY = '0000-01-01';
const LAST_DAY = '9999-12-31';

/**
 * Conversions waiting for a decision, from the report rollups (each day's pending count goes
 * up when one is recorded and down when it is decided): a few rows per day of the brand's
 * history instead of a count over every pending conversion.
 */
export async function pendingConversionCount(q: Queryable, brandId: string): Promise<number> {
  const sums = await readReportSums(q, {
    brandId,
    from: FIRST_DAY,
    to: LAST_DAY,
    byDay: false,
    byOffer: false,
    byPartner: false,
    attributes: [],
    filters: {},
  });
  return sums.reduce((n, row) => n + row.pending, 0);
}

/** What the conversions list's totals show per currency; money is null where not summed. */
export interface ConversionTotal {
  currency: string;
  count: number;
  /** Of pending and approved conversions (as reports count); null for a status filter. */
  revenueCents: number | null;
  payoutCents: number | null;
  /** Rejected among `count` (not in the amounts). */
  rejected: number;
}

/**
 * Count, revenue and payout of the conversions a list filter matches, per currency. A
 * transaction id matches a handful (its index finds them); every other filter is one the
 * report rollups are kept by — status, offer, partner, brand-local days — so the numbers come
 * from there (a few rows per day) and a brand with a million conversions is never read to
 * show a page. The rollups sum money over pending and approved conversions only, so with a
 * status filter the count is shown alone.
 */
export async function conversionTotals(
  q: Queryable,
  brandId: string,
  f: Omit<ConversionFilter, 'cursor' | 'limit'>,
  days: { from?: string; to?: string },
): Promise<ConversionTotal[]> {
  if (f.externalTxnId) return transactionTotals(q, brandId, f);
  const from = days.from ?? FIRST_DAY;
  const to = days.to ?? LAST_DAY;
  const sums = f.partnerId
    ? await partnerSums(q, brandId, [f.partnerId], from, to, f.offerId)
    : await readReportSums(q, {
        brandId,
        from,
        to,
        byDay: false,
        byOffer: false,
        byPartner: false,
        attributes: [],
        offerId: f.offerId,
        filters: {},
      });
  const byCurrency = new Map<string, ConversionTotal>();
  for (const row of sums) {
    const total = byCurrency.get(row.currency) ?? {
      currency: row.currency,
      count: 0,
      revenueCents: f.status ? null : 0,
      payoutCents: f.status ? null : 0,
      rejected: 0,
    };
    total.count += f.status ? row[f.status] : row.pending + row.approved + row.rejected;
    if (!f.status) {
      total.revenueCents = (total.revenueCents ?? 0) + row.revenue;
      total.payoutCents = (total.payoutCents ?? 0) + row.payout;
      total.rejected += row.rejected;
    }
    byCurrency.set(row.currency, total);
  }
  return [...byCurrency.values()].filter((t) => t.count !== 0).sort((a, b) => a.currency.localeCompare(b.currency));
}

/** The conversions of one transaction id (index of migration 0024), summed directly. */
async function transactionTotals(
  q: Queryable,
  brandId: string,
  f: Omit<ConversionFilter, 'cursor' | 'limit'>,
): Promise<ConversionTotal[]> {
  let query = q
    .selectFrom('conversions')
    .select((eb) => [
      'currency',
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>(sql`case when status = 'rejected' then 0 else revenue_cents end`).as('revenue'),
      eb.fn.sum<number>(sql`case when status = 'rejected' then 0 else payout_cents end`).as('payout'),
      eb.fn.sum<number>(sql`case when status = 'rejected' then 1 else 0 end`).as('rejected'),
    ])
    .where('brand_id', '=', brandId)
    .where('external_txn_id', '=', f.externalTxnId ?? '');
  if (f.status) query = query.where('status', '=', f.status);
  if (f.offerId) query = query.where('offer_id', '=', f.offerId);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.fromId !== undefined) query = query.where('id', '>=', f.fromId);
  if (f.beforeId !== undefined) query = query.where('id', '<', f.beforeId);
  const rows = await query.groupBy('currency').orderBy('currency').execute();
  return rows.map((r) => ({
    currency: r.currency,
    count: Number(r.n),
    revenueCents: f.status ? null : Number(r.revenue),
    payoutCents: f.status ? null : Number(r.payout),
    rejected: f.status ? 0 : Number(r.rejected),
  }));
}

/** Ids of a partner's postback templates (its sends in the delivery log). */
export async function partnerPostbackIds(q: Queryable, brandId: string, partnerId: string): Promise<string[]> {
  const rows = await q
    .selectFrom('partner_postbacks')
    .select('id')
    .where('partner_id', '=', partnerId)
    .where('brand_id', '=', brandId)
    .execute();
  return rows.map((r) => r.id);
}
