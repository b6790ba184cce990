/** Earnings per currency (pending, approved and unpaid, paid) and the partner's payouts. */
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { count, money } from '../../dashboard/format.js';
import { Cursor, Query } from '../../dashboard/forms.js';
import { Badge, EmptyState, Pager, Time } from '../../dashboard/views/components.js';
import { num, Table } from '../../dashboard/views/table.js';
import { listPayouts, type PayoutRow, partnerBalances } from '../../payouts/repository.js';
import { type PortalApp, renderPortal } from '../respond.js';
import { partnerSessionOf } from '../web.js';

const PAGE_SIZE = 25;

/** The details a payout is paid to, as taken when it was created. */
function paidTo(p: PayoutRow): string | null {
  const details = [p.paid_method, p.paid_account].filter(Boolean).join(': ');
  return details || null;
}

export function earningsPage(app: PortalApp, ctx: AppContext): void {
  app.get('/earnings', { schema: { querystring: Query({ cursor: Cursor }) } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const brandId = session.brand.id;
    const partnerId = session.partner.id;
    const [balances, rows] = await Promise.all([
      partnerBalances(ctx.db.read, brandId, [partnerId]),
      listPayouts(ctx.db.read, brandId, { partnerId, cursor: request.query.cursor, limit: PAGE_SIZE }),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const tz = session.brand.timezone;
    return renderPortal(request, reply, {
      title: 'Earnings',
      section: 'earnings',
      body: () => (
        <>
          <h1>Earnings</h1>
          <Table
            caption="Your earnings per currency"
            showCaption
            columns={['Currency', num('Pending'), num('Approved, not yet paid'), num('Paid')]}
            rows={balances.map((b) => [
              { text: b.currency },
              { class: 'num', text: money(b.pendingCents, b.currency) },
              { class: 'num', text: money(b.payableCents + b.inPayoutCents, b.currency) },
              { class: 'num', text: money(b.paidCents, b.currency) },
            ])}
            empty={<EmptyState title="Nothing earned yet.">Your conversions' payouts add up here.</EmptyState>}
          />
          <p class="hint">
            Pending: conversions the brand has not approved yet. Approved, not yet paid: approved conversions, including
            those in a payout being prepared. Amounts in different currencies are kept apart.
          </p>
          <h2>Payouts</h2>
          <Table
            caption="Your payouts"
            columns={['Created', 'Status', num('Amount'), num('Conversions'), 'Paid to', 'Paid', 'Reference']}
            rows={page.data.map((p) => [
              { html: <Time ms={p.created_at} timeZone={tz} /> },
              {
                html: (
                  <Badge
                    status={p.status === 'paid' ? 'approved' : p.status === 'created' ? 'pending' : 'disabled'}
                    label={p.status}
                  />
                ),
              },
              { class: 'num', text: money(p.amount_cents, p.currency) },
              { class: 'num', text: count(p.conversion_count) },
              { class: 'url', text: paidTo(p) },
              { html: <Time ms={p.paid_at} timeZone={tz} /> },
              { text: p.reference },
            ])}
            empty={<EmptyState title="No payouts yet." />}
          />
          <p class="hint">
            Paid to: your payout details when the payout was created. Changing them on the Payout details page applies
            to payouts created afterwards.
          </p>
          <Pager path="/portal/earnings" query={{ cursor: request.query.cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });
}
