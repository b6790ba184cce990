/**
 * The conversions list's filters as one object (shared by the page, its totals and the CSV),
 * and the CSV of every conversion they match, streamed page by page.
 */
import { Readable } from 'node:stream';
import { type Static, Type } from '@sinclair/typebox';
import { addDays, isRealDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import { toIso } from '../../../clock.js';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { idAt } from '../../../ids.js';
import { formatMajorUnits } from '../../../money.js';
import { type ConversionFilter, listConversions } from '../../conversions/repository.js';
import { Choice, Cursor, dayRangeProblems, Query, text } from '../forms.js';
import { offerNames, partnerNames } from '../repository.js';
import type { DashboardApp } from '../respond.js';
import { sessionOf } from '../session.js';
import { csvText } from './reportData.js';

/** Rows read per query while streaming the CSV. */
const EXPORT_BATCH = 1000;

const STATUSES = ['pending', 'approved', 'rejected'] as const;
/** The filters keep what was typed; a day that is not a date is refused beside its field. */
export const ConversionListQuery = Query({
  status: Type.Optional(Choice(STATUSES)),
  offerId: Type.Optional(Type.String({ maxLength: 64 })),
  partnerId: Type.Optional(Type.String({ maxLength: 64 })),
  from: Type.Optional(Type.String({ maxLength: 10 })),
  to: Type.Optional(Type.String({ maxLength: 10 })),
  txn: Type.Optional(Type.String({ maxLength: 255 })),
  cursor: Cursor,
});
type ConversionQuery = Static<typeof ConversionListQuery>;

/**
 * What was typed (kept in the form), and the filter it means. A day the calendar lacks or a
 * reversed range is `refused` (422, each problem beside its field), as the reports and the API
 * refuse them: listing everything (the day ignored) or nothing (a reversed range) would read
 * as an answer to the question asked.
 */
export function conversionFilterOf(given: ConversionQuery, timeZone: string) {
  const filters = {
    status: given.status || undefined,
    offerId: text(given.offerId),
    partnerId: text(given.partnerId),
    from: text(given.from),
    to: text(given.to),
    txn: text(given.txn),
  };
  const problems = dayRangeProblems(filters.from, filters.to);
  const refused = problems.length > 0 ? ApiError.validation(problems) : undefined;
  const filter: Omit<ConversionFilter, 'cursor' | 'limit'> = {
    status: filters.status,
    offerId: filters.offerId || undefined,
    partnerId: filters.partnerId || undefined,
    externalTxnId: filters.txn || undefined,
    // The days as an id range (the moment each conversion was recorded), as the delivery log
    // does: a range far back reads its own index entries instead of walking from the newest.
    fromId:
      filters.from && isRealDay(filters.from)
        ? idAt('conv', startOfLocalDay(parseDay(filters.from), timeZone))
        : undefined,
    beforeId:
      filters.to && isRealDay(filters.to)
        ? idAt('conv', startOfLocalDay(addDays(parseDay(filters.to), 1), timeZone))
        : undefined,
  };
  return { filters, filter, refused };
}

const HEADER = [
  'id',
  'created_at',
  'status',
  'offer_id',
  'offer_name',
  'partner_id',
  'partner_name',
  'revenue',
  'payout',
  'currency',
  'external_txn_id',
  'click_id',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
];

async function* csvLines(ctx: AppContext, brandId: string, filter: Omit<ConversionFilter, 'cursor' | 'limit'>) {
  yield `${HEADER.join(',')}\r\n`;
  let cursor: string | undefined;
  do {
    const rows = await listConversions(ctx.db.read, brandId, { ...filter, cursor, limit: EXPORT_BATCH });
    const page = rows.slice(0, EXPORT_BATCH);
    const [offers, partners] = await Promise.all([
      offerNames(
        ctx.db.read,
        brandId,
        page.map((c) => c.offer_id),
      ),
      partnerNames(
        ctx.db.read,
        brandId,
        page.map((c) => c.partner_id),
      ),
    ]);
    yield page
      .map((c) => {
        const cells = [
          c.id,
          toIso(c.created_at),
          c.status,
          c.offer_id,
          offers.get(c.offer_id) ?? '',
          c.partner_id,
          partners.get(c.partner_id) ?? '',
          formatMajorUnits(c.revenue_cents, c.currency),
          formatMajorUnits(c.payout_cents, c.currency),
          c.currency,
          c.external_txn_id ?? '',
          c.click_id ?? '',
          c.sub1 ?? '',
          c.sub2 ?? '',
          c.sub3 ?? '',
          c.sub4 ?? '',
          c.sub5 ?? '',
        ];
        return `${cells.map(csvText).join(',')}\r\n`;
      })
      .join('');
    cursor = rows.length > EXPORT_BATCH ? page[page.length - 1]?.id : undefined;
  } while (cursor);
}

export function conversionExportRoute(app: DashboardApp, ctx: AppContext): void {
  app.get('/conversions/export.csv', { schema: { querystring: ConversionListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { filter, refused } = conversionFilterOf(request.query, brand.timezone);
    // The reports' CSV answers the same way: the dashboard's 422 page.
    if (refused) throw refused;
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', 'attachment; filename="affitrack-conversions.csv"')
      .send(Readable.from(csvLines(ctx, brand.id, filter)));
  });
}
