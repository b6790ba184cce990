/** Offers open to the partner, and a tracking-link builder (sub1–sub5) with a Copy button. */
import { escapeHtml } from '@kitajs/html';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { money } from '../../dashboard/format.js';
import { Cursor, IdParams, Query, TextFields, text } from '../../dashboard/forms.js';
import { BackLink, CopyField, EmptyState, Pager } from '../../dashboard/views/components.js';
import { num, Table } from '../../dashboard/views/table.js';
import { findOffer } from '../../offers/repository.js';
import { partnerOffers, trackingUrl } from '../partnerData.js';
import { type PortalApp, renderPortal, sendPortalError } from '../respond.js';
import { partnerSessionOf } from '../web.js';

const PAGE_SIZE = 25;
const SUBS = ['sub1', 'sub2', 'sub3', 'sub4', 'sub5'] as const;
const SUB_MAX_LENGTH = 255;
const BuilderQuery = Query(TextFields(SUBS));

export function offerPages(app: PortalApp, ctx: AppContext): void {
  app.get('/offers', { schema: { querystring: Query({ cursor: Cursor }) } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const scope = { brandId: session.brand.id, partnerId: session.partner.id };
    const rows = await partnerOffers(ctx.db.read, scope, { cursor: request.query.cursor, limit: PAGE_SIZE });
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    return renderPortal(request, reply, {
      title: 'Offers',
      section: 'offers',
      body: () => (
        <>
          <h1>Offers</h1>
          <Table
            caption="Offers open to you"
            columns={['Offer', num('Payout per conversion'), 'Tracking link']}
            rows={page.data.map((o) => [
              {
                class: 'name',
                html: (
                  <a href={`/portal/offers/${o.id}`} safe>
                    {o.name}
                  </a>
                ),
              },
              { class: 'num', text: money(o.payout_cents, o.currency) },
              {
                html: (
                  <CopyField
                    id={`link-${o.id}`}
                    label={`Tracking link for ${o.name}`}
                    value={trackingUrl(ctx, o.id, scope.partnerId)}
                    visibleLabel={false}
                  />
                ),
              },
            ])}
            empty={<EmptyState title="No offers are open yet.">The brand has no active offer right now.</EmptyState>}
          />
          <Pager path="/portal/offers" query={{ cursor: request.query.cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });

  app.get('/offers/:id', { schema: { params: IdParams, querystring: BuilderQuery } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const offer = await findOffer(ctx.db.read, session.brand.id, request.params.id);
    if (offer?.status !== 'active') {
      return sendPortalError(reply, request, 404, 'There is no such offer open to you.');
    }
    const subs: Record<string, string> = {};
    for (const name of SUBS) subs[name] = text(request.query[name]).slice(0, SUB_MAX_LENGTH);
    const link = trackingUrl(ctx, offer.id, session.partner.id, subs);
    return renderPortal(request, reply, {
      title: offer.name,
      section: 'offers',
      body: () => (
        <>
          <BackLink href="/portal/offers" label="Offers" />
          <h1 safe>{offer.name}</h1>
          <p safe>{`You earn ${money(offer.payout_cents, offer.currency)} per conversion.`}</p>
          <h2>Build a tracking link</h2>
          <form method="get" action={`/portal/offers/${offer.id}`} class="filters">
            {SUBS.map((name) => (
              <div>
                <label for={name}>{name}</label>
                <input id={name} name={name} maxlength={String(SUB_MAX_LENGTH)} value={escapeHtml(subs[name] ?? '')} />
              </div>
            ))}
            <div>
              <button type="submit">Build link</button>
            </div>
          </form>
          <CopyField id="tracking-link" label="Your tracking link" value={link} />
          <p class="hint">
            Sub values come back with every click and conversion, in your reports and in your postbacks ({'{sub1}'}…
            {'{sub5}'}).
          </p>
        </>
      ),
    });
  });
}
