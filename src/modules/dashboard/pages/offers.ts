/** Offers: list by status, create, edit, and each active partner's tracking link. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { findOffer, listOffers, type OfferRow } from '../../offers/repository.js';
import { createOffer, updateOffer } from '../../offers/service.js';
import { listPartners } from '../../partners/repository.js';
import { badge, copyField, emptyState, pager, tabs } from '../components.js';
import { notFound } from '../errors.js';
import { duration, money, time } from '../format.js';
import { formBody, valuesOf } from '../forms.js';
import { html } from '../html.js';
import { formError, pathId, queryParam, render } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { offerForm, offerInput, offerValues } from './offerForm.js';

const PAGE_SIZE = 25;
const STATUSES = ['active', 'paused', 'archived'] as const;

function capsSummary(o: OfferRow): string {
  const caps = [
    ['day', o.cap_daily],
    ['week', o.cap_weekly],
    ['month', o.cap_monthly],
    ['total', o.cap_global],
  ].filter(([, n]) => n !== null);
  return caps.length === 0 ? '—' : caps.map(([label, n]) => `${n}/${label}`).join(', ');
}

export function offerPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/offers', async (request, reply) => {
    const { brand } = sessionOf(request);
    const status = STATUSES.find((s) => s === queryParam(request, 'status'));
    const cursor = queryParam(request, 'cursor') || undefined;
    const page = toPage(
      await listOffers(ctx.db.read, brand.id, { status, cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const rows = page.data.map(
      (
        o,
      ) => html`<tr><th scope="row"><a href="/dashboard/offers/${o.id}">${o.name}</a><br><span class="muted small mono">${o.id}</span></th>
<td>${badge(o.status)}</td><td class="num">${money(o.revenue_cents, o.currency)}</td><td class="num">${money(o.payout_cents, o.currency)}</td>
<td>${o.conversion_status}</td><td>${o.hold_seconds === null ? 'manual' : duration(o.hold_seconds)}</td><td>${capsSummary(o)}</td><td>${time(o.created_at, brand.timezone)}</td></tr>`,
    );
    const table =
      rows.length === 0
        ? emptyState(
            status ? `No ${status} offers` : 'No offers yet',
            html`<a href="/dashboard/offers/new">Create the first offer</a>.`,
          )
        : html`<table><caption class="visually-hidden">Offers</caption><thead><tr><th scope="col">Offer</th><th scope="col">Status</th><th scope="col" class="num">Revenue</th>
<th scope="col" class="num">Payout</th><th scope="col">Starts as</th><th scope="col">Auto-approve</th><th scope="col">Caps</th><th scope="col">Created</th></tr></thead><tbody>${rows}</tbody></table>`;
    return render(ctx, request, reply, {
      title: 'Offers',
      section: 'offers',
      body: () => html`<div class="head"><h1>Offers</h1><a class="btn" href="/dashboard/offers/new">New offer</a></div>
${tabs('Offer status', [
  { href: '/dashboard/offers', text: 'All', current: !status },
  ...STATUSES.map((s) => ({
    href: `/dashboard/offers?status=${s}`,
    text: s[0]!.toUpperCase() + s.slice(1),
    current: status === s,
  })),
])}
<div class="table-wrap">${table}</div>${pager('/dashboard/offers', { status, cursor }, page.nextCursor)}`,
    });
  });

  const showNew = (
    request: FastifyRequest,
    reply: FastifyReply,
    values?: Record<string, string | string[]>,
    error?: ApiError,
  ) => {
    const session = sessionOf(request);
    return render(ctx, request, reply, {
      title: 'New offer',
      section: 'offers',
      status: error ? error.status : 200,
      body: () => html`<p><a href="/dashboard/offers">« Offers</a></p><h1>New offer</h1>
${offerForm(session, '/dashboard/offers', values ?? offerValues(null, session.brand.currency), error, 'Create offer')}`,
    });
  };

  app.get('/offers/new', async (request, reply) => showNew(request, reply));

  app.post('/offers', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    try {
      const row = await createOffer(ctx, brand.id, offerInput(form, brand.currency));
      return redirectWithFlash(ctx, reply, `/dashboard/offers/${row.id}`, {
        kind: 'ok',
        text: `Offer “${row.name}” created.`,
      });
    } catch (error) {
      return showNew(request, reply, valuesOf(form), formError(error));
    }
  });

  const showEdit = async (
    request: FastifyRequest,
    reply: FastifyReply,
    offer: OfferRow,
    values?: Record<string, string | string[]>,
    error?: ApiError,
  ) => {
    const session = sessionOf(request);
    const cursor = queryParam(request, 'partners') || undefined;
    const partners = toPage(
      await listPartners(ctx.db.read, session.brand.id, { status: 'active', cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const base = `${ctx.config.publicUrl}/t/${offer.id}/`;
    const links =
      partners.data.length === 0
        ? emptyState(
            'No active partners yet',
            html`Approve applicants on the <a href="/dashboard/partners?status=applicant">Partners</a> page.`,
          )
        : html`<table><caption class="visually-hidden">Tracking links</caption><thead><tr><th scope="col">Partner</th><th scope="col">Tracking link</th></tr></thead><tbody>${partners.data.map(
            (p) =>
              html`<tr><th scope="row"><a href="/dashboard/partners/${p.id}">${p.name}</a></th><td>${copyField(`link-${p.id}`, `Tracking link for ${p.name}`, base + p.id, { visibleLabel: false })}</td></tr>`,
          )}</tbody></table>`;
    return render(ctx, request, reply, {
      title: offer.name,
      section: 'offers',
      status: error ? error.status : 200,
      body: () => html`<p><a href="/dashboard/offers">« Offers</a></p>
<h1>${offer.name} ${badge(offer.status)}</h1>
<p class="muted small"><span class="mono">${offer.id}</span> · created ${time(offer.created_at, session.brand.timezone)} · updated ${time(offer.updated_at, session.brand.timezone)}</p>
<div class="cols"><section aria-labelledby="edit-h" class="panel"><h2 id="edit-h">Settings</h2>
${offerForm(session, `/dashboard/offers/${offer.id}`, values ?? offerValues(offer, session.brand.currency), error, 'Save changes')}</section>
<section aria-labelledby="links-h"><h2 id="links-h">Tracking links</h2><p class="hint">One link per active partner; append <code>?sub1=…</code> to <code>sub5</code> for sub-tracking.</p>
<div class="table-wrap">${links}</div>${pager(`/dashboard/offers/${offer.id}`, { partners: cursor }, partners.nextCursor, 'partners')}</section></div>`,
    });
  };

  app.get('/offers/:id', async (request, reply) => {
    const offer = await findOffer(ctx.db.read, sessionOf(request).brand.id, pathId(request));
    if (!offer) return notFound(reply, request, 'offer');
    return showEdit(request, reply, offer);
  });

  app.post('/offers/:id', async (request, reply) => {
    const { brand } = sessionOf(request);
    const offer = await findOffer(ctx.db.read, brand.id, pathId(request));
    if (!offer) return notFound(reply, request, 'offer');
    const form = formBody(request.body);
    try {
      const row = await updateOffer(ctx, brand.id, offer.id, offerInput(form, brand.currency));
      return redirectWithFlash(ctx, reply, `/dashboard/offers/${row.id}`, { kind: 'ok', text: 'Offer saved.' });
    } catch (error) {
      return showEdit(request, reply, offer, valuesOf(form), formError(error));
    }
  });
}
