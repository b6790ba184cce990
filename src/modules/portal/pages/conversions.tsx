/** The partner's own conversions: filters, status and what they earn (nothing when rejected; never the brand's revenue). */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { InvalidError } from '../../../errors.js';
import { type ApiError, toApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import type { ConversionRow } from '../../conversions/repository.js';
import { money } from '../../dashboard/format.js';
import { Choice, Cursor, Query } from '../../dashboard/forms.js';
import { Badge, EmptyState, Pager, Time } from '../../dashboard/views/components.js';
import { num, Table } from '../../dashboard/views/table.js';
import { partnerConversions, partnerOfferMenu } from '../partnerData.js';
import { type PortalApp, renderPortal } from '../respond.js';
import { DayRangeForm } from '../views/dayRange.js';
import { partnerSessionOf } from '../web.js';

const PAGE_SIZE = 50;
const STATUSES = ['pending', 'approved', 'rejected'] as const;
const Short = Type.Optional(Type.String({ maxLength: 64 }));
const ConversionsQuery = Query({
  status: Type.Optional(Choice(STATUSES)),
  offerId: Short,
  from: Short,
  to: Short,
  cursor: Cursor,
});

export function conversionPages(app: PortalApp, ctx: AppContext): void {
  app.get('/conversions', { schema: { querystring: ConversionsQuery } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const scope = { brandId: session.brand.id, partnerId: session.partner.id };
    const q = request.query;
    const from = q.from || undefined;
    const to = q.to || undefined;
    const offers = await partnerOfferMenu(ctx.db.read, scope);
    let rows: ConversionRow[] | null = null;
    let error: ApiError | undefined;
    try {
      rows = await partnerConversions(ctx.db.read, scope, {
        status: q.status || undefined,
        offerId: q.offerId || undefined,
        from,
        to,
        cursor: q.cursor,
        limit: PAGE_SIZE,
      });
    } catch (e) {
      // As on the overview: a day the calendar lacks, or a reversed range, is said, not dropped.
      if (!(e instanceof InvalidError)) throw e;
      error = toApiError(e);
    }
    const range = new DayRangeForm(
      { from: from ?? '', to: to ?? '' },
      { from: 'From (day, brand time zone)', to: 'To (day, brand time zone)' },
      error,
    );
    const page = toPage(rows ?? [], PAGE_SIZE, (r) => r);
    const names = new Map(offers.map((o) => [o.id, o.name]));
    const tz = session.brand.timezone;
    const filters = { status: q.status, offerId: q.offerId, from, to };
    return renderPortal(request, reply, {
      title: 'Conversions',
      section: 'conversions',
      status: error ? 422 : 200,
      body: () => (
        <>
          <h1>Conversions</h1>
          {range.summary()}
          <form method="get" action="/portal/conversions" class="filters">
            <div>
              <label for="status">Status</label>
              <select id="status" name="status">
                <option value="">All</option>
                {STATUSES.map((s) => (
                  <option value={s} selected={q.status === s}>
                    {s}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for="offerId">Offer</label>
              <select id="offerId" name="offerId">
                <option value="">All offers</option>
                {offers.map((o) => (
                  <option value={escapeHtml(o.id)} selected={q.offerId === o.id} safe>
                    {o.name}
                  </option>
                ))}
              </select>
            </div>
            {range.input('from', { type: 'date' })}
            {range.input('to', { type: 'date' })}
            <div>
              <button type="submit">Filter</button>
            </div>
          </form>
          {rows ? (
            <>
              <Table
                caption="Your conversions"
                columns={['Recorded', 'Offer', 'Status', num('You earn'), 'sub1', 'sub2', 'Conversion']}
                rows={page.data.map((c) => [
                  { html: <Time ms={c.created_at} timeZone={tz} /> },
                  { class: 'name', text: names.get(c.offer_id) ?? c.offer_id },
                  { html: <Badge status={c.status} /> },
                  // A rejected conversion earns nothing: its recorded payout is not what the partner earns.
                  c.status === 'rejected'
                    ? { class: 'num', html: <span class="muted">—</span> }
                    : { class: 'num', text: money(c.payout_cents, c.currency) },
                  { text: c.sub1 },
                  { text: c.sub2 },
                  { class: 'mono', text: c.id },
                ])}
                empty={
                  <EmptyState title="No conversions match.">Conversions appear here as they are recorded.</EmptyState>
                }
              />
              <p class="hint">
                You earn a conversion's payout once the brand approves it; a rejected one earns nothing.
              </p>
            </>
          ) : (
            ''
          )}
          <Pager path="/portal/conversions" query={{ ...filters, cursor: q.cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });
}
