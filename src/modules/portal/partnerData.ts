/**
 * What a partner may see of a brand's data, for the portal pages and the partner API alike:
 * every read is scoped to one brand *and* one partner, and the shapes carry the partner's
 * payout (payoutCents, earned once approved), never the brand's revenue or profit.
 */
import { type Static, Type } from '@sinclair/typebox';
import { isRealDay } from '../../calendar.js';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/database.js';
import { InvalidError } from '../../errors.js';
import { IdFilter, Nullable, NullableTimestamp, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { type ConversionRow, listConversions } from '../conversions/repository.js';
import { ConversionStatus } from '../conversions/schemas.js';
import { listOffers, type OfferRow } from '../offers/repository.js';
import { buildReport } from '../reports/service.js';

export interface PartnerScope {
  brandId: string;
  partnerId: string;
}

export const PartnerConversion = Resource('PartnerConversion', {
  id: Type.String(),
  offerId: Type.String(),
  clickId: Nullable(Type.String()),
  status: ConversionStatus,
  payoutCents: Type.Integer({
    description:
      "The conversion's payout (minor units): earned once the conversion is approved, not yet while it is pending. A rejected conversion earns nothing; it keeps the payout it was recorded with here.",
  }),
  currency: Type.String(),
  sub1: Nullable(Type.String()),
  sub2: Nullable(Type.String()),
  sub3: Nullable(Type.String()),
  sub4: Nullable(Type.String()),
  sub5: Nullable(Type.String()),
  approvedAt: NullableTimestamp,
  rejectedAt: NullableTimestamp,
  createdAt: Timestamp,
});
export type PartnerConversion = Static<typeof PartnerConversion>;

export function partnerConversionToApi(row: ConversionRow): PartnerConversion {
  return {
    id: row.id,
    offerId: row.offer_id,
    clickId: row.click_id,
    status: row.status,
    payoutCents: row.payout_cents,
    currency: row.currency,
    sub1: row.sub1,
    sub2: row.sub2,
    sub3: row.sub3,
    sub4: row.sub4,
    sub5: row.sub5,
    approvedAt: toIsoOrNull(row.approved_at),
    rejectedAt: toIsoOrNull(row.rejected_at),
    createdAt: toIso(row.created_at),
  };
}

export const PartnerConversionsQuery = Type.Object(
  {
    status: Type.Optional(ConversionStatus),
    offerId: IdFilter('offer'),
    from: Type.Optional(
      Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'First day (brand time zone, YYYY-MM-DD).' }),
    ),
    to: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'Last day, inclusive.' })),
    ...pageQuery('conv'),
  },
  { additionalProperties: false },
);
export type PartnerConversionsQuery = Static<typeof PartnerConversionsQuery>;

/**
 * `from`/`to` are days of the brand's time zone, matched against the conversion's brand-local
 * creation day as the partner report and the brand's /conversions count them: the same days
 * show the same conversions in the list and the report. A day that is not in the calendar,
 * or a reversed range, is refused (InvalidError, paths `query.from`/`query.to`) for the API
 * and the portal page alike, as the report refuses them: dropping the filter would answer
 * with a list that looks filtered and is not.
 */
export function partnerConversions(
  q: Queryable,
  scope: PartnerScope,
  f: { status?: ConversionRow['status']; offerId?: string; from?: string; to?: string; cursor?: string; limit: number },
): Promise<ConversionRow[]> {
  const problems = (['from', 'to'] as const)
    .filter((edge) => f[edge] !== undefined && !isRealDay(f[edge] ?? ''))
    .map((edge) => ({ path: `query.${edge}`, message: 'is not a calendar date' }));
  if (problems.length === 0 && f.from !== undefined && f.to !== undefined && f.from > f.to) {
    problems.push({ path: 'query.from', message: 'must not be after to' });
  }
  if (problems.length > 0) return Promise.reject(new InvalidError(problems));
  return listConversions(q, scope.brandId, {
    status: f.status,
    offerId: f.offerId,
    partnerId: scope.partnerId,
    fromDay: f.from,
    toDay: f.to,
    cursor: f.cursor,
    limit: f.limit,
  });
}

export const PartnerOffer = Resource('PartnerOffer', {
  id: Type.String(),
  name: Type.String(),
  currency: Type.String(),
  payoutCents: Type.Integer({ description: 'Default payout per conversion (minor units).' }),
  trackingUrl: Type.String({ description: 'Your tracking link; add sub1…sub5 query parameters as you like.' }),
});
export type PartnerOffer = Static<typeof PartnerOffer>;

export function trackingUrl(ctx: AppContext, offerId: string, partnerId: string, subs: Record<string, string> = {}) {
  const url = new URL(`${ctx.config.publicUrl}/t/${encodeURIComponent(offerId)}/${encodeURIComponent(partnerId)}`);
  for (const [name, value] of Object.entries(subs)) if (value) url.searchParams.set(name, value);
  return url.toString();
}

export function partnerOfferToApi(ctx: AppContext, scope: PartnerScope, row: OfferRow): PartnerOffer {
  return {
    id: row.id,
    name: row.name,
    currency: row.currency,
    payoutCents: row.payout_cents,
    trackingUrl: trackingUrl(ctx, row.id, scope.partnerId),
  };
}

/** Offers open to the brand's partners: the active ones (paused and archived links do not redirect). */
export function partnerOffers(q: Queryable, scope: PartnerScope, page: { cursor?: string; limit: number }) {
  return listOffers(q, scope.brandId, { status: 'active', ...page });
}

/**
 * The offers a partner may see named (the conversions page's offer menu and its rows): the
 * brand's active offers and those of the partner's own conversions, however many. A paused or
 * archived offer the partner has no conversion of stays unknown to it, name and id.
 */
export function partnerOfferMenu(q: Queryable, scope: PartnerScope): Promise<Array<{ id: string; name: string }>> {
  return q
    .selectFrom('offers as o')
    .select(['o.id', 'o.name'])
    .where('o.brand_id', '=', scope.brandId)
    .where((eb) =>
      eb.or([
        eb('o.status', '=', 'active'),
        eb.exists(
          eb
            .selectFrom('conversions as c')
            .select('c.id')
            .whereRef('c.offer_id', '=', 'o.id')
            .where('c.brand_id', '=', scope.brandId)
            .where('c.partner_id', '=', scope.partnerId),
        ),
      ]),
    )
    .orderBy('o.id', 'desc')
    .execute();
}

export const PartnerReportQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'First day (brand time zone).' }),
    ),
    to: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'Last day, inclusive.' })),
  },
  { additionalProperties: false },
);

const partnerMetrics = {
  clicks: Type.Integer(),
  conversions: Type.Integer({ description: 'pending + approved' }),
  approved: Type.Integer(),
  pending: Type.Integer(),
  rejected: Type.Integer(),
  payoutCents: Type.Integer({ description: 'Earned over pending + approved conversions.' }),
};
const PartnerReportTotals = Resource('PartnerReportTotals', { currency: Type.String(), ...partnerMetrics });
export const PartnerReport = Resource('PartnerReport', {
  from: Type.String(),
  to: Type.String(),
  data: Type.Array(Resource('PartnerReportRow', { day: Type.String(), currency: Type.String(), ...partnerMetrics }), {
    description: 'One row per day and currency: earnings are never added across currencies.',
  }),
  totalsByCurrency: Type.Array(PartnerReportTotals, {
    description:
      'One entry per currency in the report (the brand currency when it is empty), as `totalsByCurrency` of GET /reports: earnings are never summed across currencies.',
  }),
  totals: Type.Array(PartnerReportTotals, {
    deprecated: true,
    description:
      'Deprecated: the same entries as `totalsByCurrency`, kept for clients written before it. Read `totalsByCurrency` (on GET /reports `totals` is an object over the whole report).',
  }),
});
export type PartnerReport = Static<typeof PartnerReport>;

/** Clicks, conversions and earnings per brand-local day and currency of one partner (revenue left out). */
export async function partnerReport(
  ctx: AppContext,
  scope: PartnerScope,
  range: { from?: string; to?: string },
): Promise<PartnerReport> {
  const report = await buildReport(ctx, scope.brandId, { ...range, partnerId: scope.partnerId, groupBy: 'day' });
  const pick = (m: (typeof report)['totalsByCurrency'][number]) => ({
    currency: m.currency,
    clicks: m.clicks,
    conversions: m.conversions,
    approved: m.approved,
    pending: m.pending,
    rejected: m.rejected,
    payoutCents: m.payoutCents,
  });
  const totalsByCurrency = report.totalsByCurrency.map(pick);
  return {
    from: report.from,
    to: report.to,
    data: report.data.map((row) => ({ day: row.day ?? '', ...pick(row) })),
    totalsByCurrency,
    totals: totalsByCurrency,
  };
}
