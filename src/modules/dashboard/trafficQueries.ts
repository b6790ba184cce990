/**
 * What the dashboard's lists, pages and totals show of traffic and money: per offer or
 * partner from the report rollups, and the conversions list's totals per currency. Scoped to
 * the session's brand.
 */
import { sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import { DAY_SPAN, LEVEL_OFFER_PARTNER, LEVEL_PARTNER, rollupsReadBy } from '../analytics/grains.js';
import { readReportSums, type SumsRow } from '../analytics/reportQuery.js';
import type { ConversionFilter } from '../conversions/repository.js';

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
