/** Turns the reports page's query into a buildReport call, and its rows into CSV. */
import { type Static, Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { InvalidError } from '../../../errors.js';
import { ApiError } from '../../../http/errors.js';
import { formatMajorUnits } from '../../../money.js';
import type { Report } from '../../reports/schemas.js';
import { buildReport } from '../../reports/service.js';
import { Choice, Query, text } from '../forms.js';
import { offerNames, partnerNames } from '../repository.js';

export const TIME_UNITS = ['day', 'week', 'month'] as const;
/** EPC is an average of minor units: two more decimals than the currency keep it meaningful (0.0123). */
const EPC_EXTRA_DECIMALS = 2;

/** What the report form sends; the days' content is the report service's to check. */
export const ReportQuery = Query({
  from: Type.Optional(Type.String({ maxLength: 10 })),
  to: Type.Optional(Type.String({ maxLength: 10 })),
  offerId: Type.Optional(Type.String({ maxLength: 64 })),
  partnerId: Type.Optional(Type.String({ maxLength: 64 })),
  time: Type.Optional(Choice(TIME_UNITS)),
  by: Type.Optional(Type.Array(Choice(['offer', 'partner'] as const), { maxItems: 2 })),
  /** Rows are computed, not stored, so the table pages by offset. */
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
});
type ReportQuery = Static<typeof ReportQuery>;

export interface ReportFilters {
  from: string;
  to: string;
  offerId: string;
  partnerId: string;
  /** '' (no time grouping), day, week or month. */
  time: string;
  byOffer: boolean;
  byPartner: boolean;
}

export function filtersOf(query: ReportQuery): ReportFilters {
  // A first visit (no query at all) shows days; after that the form says what it wants.
  const fresh = Object.keys(query).length === 0;
  return {
    from: text(query.from),
    to: text(query.to),
    offerId: text(query.offerId),
    partnerId: text(query.partnerId),
    time: fresh ? 'day' : (query.time ?? ''),
    byOffer: query.by?.includes('offer') ?? false,
    byPartner: query.by?.includes('partner') ?? false,
  };
}

export function filterQuery(f: ReportFilters): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of ['from', 'to', 'offerId', 'partnerId', 'time'] as const) if (f[key]) params.set(key, f[key]);
  if (!f.time) params.set('time', '');
  if (f.byOffer) params.append('by', 'offer');
  if (f.byPartner) params.append('by', 'partner');
  return params;
}

export interface NamedReport extends Report {
  offers: Map<string, string>;
  partners: Map<string, string>;
}

/** Runs the report service; its 422 comes back with the form's field names. */
export async function runReport(ctx: AppContext, brandId: string, f: ReportFilters): Promise<NamedReport> {
  const groupBy = [f.time, f.byOffer ? 'offer' : '', f.byPartner ? 'partner' : ''].filter(Boolean).join(',');
  try {
    const report = await buildReport(ctx, brandId, {
      from: f.from || undefined,
      to: f.to || undefined,
      offerId: f.offerId || undefined,
      partnerId: f.partnerId || undefined,
      groupBy: groupBy || undefined,
    });
    const [offers, partners] = await Promise.all([
      offerNames(
        ctx.db.read,
        brandId,
        report.data.flatMap((r) => (r.offerId ? [r.offerId] : [])),
      ),
      partnerNames(
        ctx.db.read,
        brandId,
        report.data.flatMap((r) => (r.partnerId ? [r.partnerId] : [])),
      ),
    ]);
    return { ...report, offers, partners };
  } catch (error) {
    if (error instanceof InvalidError) {
      throw ApiError.validation(error.problems.map((d) => ({ ...d, path: d.path.replace(/^query\./, '') })));
    }
    throw error;
  }
}

/**
 * A cell as CSV: quoted when needed, and text starting with = + - @ (or a control
 * character) prefixed with ' so spreadsheets never run a partner's name as a formula.
 */
export function csvText(value: string): string {
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function reportCsv(report: NamedReport): string {
  const keys = [...(report.data[0] ? ['day', 'week', 'month'].filter((k) => k in report.data[0]!) : [])];
  const header = [
    ...keys,
    ...(report.groupBy.includes('offer') ? ['offer_id', 'offer_name'] : []),
    ...(report.groupBy.includes('partner') ? ['partner_id', 'partner_name'] : []),
    'clicks',
    'conversions',
    'approved',
    'pending',
    'rejected',
    'revenue',
    'payout',
    'profit',
    'conversion_rate',
    'epc',
    'currency',
  ];
  const lines = report.data.map((r) => {
    const currency = r.currency;
    const row = r as Record<string, string | number | undefined>;
    const text = [
      ...keys.map((k) => String(row[k] ?? '')),
      ...(report.groupBy.includes('offer') ? [r.offerId ?? '', report.offers.get(r.offerId ?? '') ?? ''] : []),
      ...(report.groupBy.includes('partner') ? [r.partnerId ?? '', report.partners.get(r.partnerId ?? '') ?? ''] : []),
    ].map(csvText);
    // Numbers are written by us: no quoting or formula guard (a negative profit stays a number).
    const numbers = [
      r.clicks,
      r.conversions,
      r.approved,
      r.pending,
      r.rejected,
      formatMajorUnits(r.revenueCents, currency),
      formatMajorUnits(r.payoutCents, currency),
      formatMajorUnits(r.profitCents, currency),
      r.conversionRate,
      formatMajorUnits(r.epcCents, currency, EPC_EXTRA_DECIMALS),
      currency,
    ];
    return [...text, ...numbers].join(',');
  });
  return `${[header.join(','), ...lines].join('\r\n')}\r\n`;
}
