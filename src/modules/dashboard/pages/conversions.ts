/** Conversions: a filterable list with single and bulk decisions, and one conversion's page. */
import type { FastifyInstance } from 'fastify';
import { addDays, isRealDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { type ConversionRow, findConversion, listConversions } from '../../conversions/repository.js';
import { actionButton, badge, csrfField, emptyState, pager } from '../components.js';
import { notFound } from '../errors.js';
import { money, time } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { offerMenu, offerNames, partnerMenu, partnerNames } from '../repository.js';
import { pathId, queryParam, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { conversionDecisionRoutes } from './conversionDecisions.js';

const PAGE_SIZE = 50;
const STATUSES = ['pending', 'approved', 'rejected'] as const;

function statusCell(c: ConversionRow, tz: string): SafeHtml {
  return html`${badge(c.status)}${c.cap_exceeded ? html` ${badge('failed', 'over cap')}` : ''}${
    c.status === 'pending' && c.hold_until !== null
      ? html`<br><span class="small muted">auto-approves ${time(c.hold_until, tz)}</span>`
      : ''
  }`;
}

function menu(name: string, label: string, items: Array<{ id: string; name: string }>, current: string): SafeHtml {
  return html`<div><label for="${name}">${label}</label><select id="${name}" name="${name}"><option value="">All</option>${items.map(
    (i) => html`<option value="${i.id}"${i.id === current ? html` selected` : ''}>${i.name}</option>`,
  )}</select></div>`;
}

export function conversionPages(app: FastifyInstance, ctx: AppContext): void {
  conversionDecisionRoutes(app, ctx);

  app.get('/conversions', async (request, reply) => {
    const session = sessionOf(request);
    const { brand } = session;
    const tz = brand.timezone;
    const filters = {
      status: STATUSES.find((s) => s === queryParam(request, 'status')),
      offerId: queryParam(request, 'offerId', 64),
      partnerId: queryParam(request, 'partnerId', 64),
      from: queryParam(request, 'from', 10),
      to: queryParam(request, 'to', 10),
      txn: queryParam(request, 'txn', 255),
    };
    const problems: string[] = [];
    if (filters.from && !isRealDay(filters.from)) problems.push('“From” must be a date.');
    if (filters.to && !isRealDay(filters.to)) problems.push('“To” must be a date.');
    const cursor = queryParam(request, 'cursor') || undefined;
    const q = ctx.db.read;
    const [rows, offers, partners] = await Promise.all([
      listConversions(q, brand.id, {
        status: filters.status,
        offerId: filters.offerId || undefined,
        partnerId: filters.partnerId || undefined,
        externalTxnId: filters.txn || undefined,
        fromMs: filters.from && isRealDay(filters.from) ? startOfLocalDay(parseDay(filters.from), tz) : undefined,
        toMs:
          filters.to && isRealDay(filters.to) ? startOfLocalDay(addDays(parseDay(filters.to), 1), tz) - 1 : undefined,
        cursor,
        limit: PAGE_SIZE,
      }),
      offerMenu(q, brand.id),
      partnerMenu(q, brand.id),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const [offerNamesMap, partnerNamesMap] = await Promise.all([
      offerNames(
        q,
        brand.id,
        page.data.map((c) => c.offer_id),
      ),
      partnerNames(
        q,
        brand.id,
        page.data.map((c) => c.partner_id),
      ),
    ]);
    const anyPending = page.data.some((c) => c.status === 'pending');
    const rowsHtml = page.data.map(
      (
        c,
      ) => html`<tr><td>${c.status === 'pending' ? html`<input type="checkbox" name="ids" value="${c.id}" data-row aria-label="Select conversion ${c.id}">` : ''}</td>
<td><a href="/dashboard/conversions/${c.id}">${time(c.created_at, tz)}</a><br><span class="muted small mono">${c.id}</span></td>
<td>${offerNamesMap.get(c.offer_id) ?? c.offer_id}</td><td>${partnerNamesMap.get(c.partner_id) ?? c.partner_id}</td>
<td>${statusCell(c, tz)}</td><td class="num">${money(c.revenue_cents, c.currency)}</td><td class="num">${money(c.payout_cents, c.currency)}</td>
<td class="mono small">${c.external_txn_id ?? ''}</td>
<td>${c.status === 'pending' ? html`<div class="actions"><button type="submit" name="approve" value="${c.id}" class="small" aria-label="Approve ${c.id}">Approve</button><button type="submit" name="reject" value="${c.id}" class="small danger" aria-label="Reject ${c.id}">Reject</button></div>` : ''}</td></tr>`,
    );
    const filtered = Object.values(filters).some(Boolean);
    const table =
      rowsHtml.length === 0
        ? emptyState(
            filtered ? 'No conversions match these filters' : 'No conversions yet',
            filtered
              ? html`<a href="/dashboard/conversions">Clear the filters</a>.`
              : 'They appear here as soon as advertisers report them.',
          )
        : html`<table><caption class="visually-hidden">Conversions</caption><thead><tr>
<th scope="col">${anyPending ? html`<input type="checkbox" data-select-all aria-label="Select all pending conversions on this page">` : html`<span class="visually-hidden">Select</span>`}</th>
<th scope="col">Recorded</th><th scope="col">Offer</th><th scope="col">Partner</th><th scope="col">Status</th><th scope="col" class="num">Revenue</th><th scope="col" class="num">Payout</th><th scope="col">Txn id</th><th scope="col">Decide</th></tr></thead>
<tbody>${rowsHtml}</tbody></table>`;
    const query = { ...filters, cursor };
    return render(ctx, request, reply, {
      title: 'Conversions',
      section: 'conversions',
      body: () => html`<h1>Conversions</h1>
<form method="get" action="/dashboard/conversions" class="filters" aria-label="Filters">
<div><label for="status">Status</label><select id="status" name="status"><option value="">All</option>${STATUSES.map(
        (s) => html`<option value="${s}"${s === filters.status ? html` selected` : ''}>${s}</option>`,
      )}</select></div>
${menu('offerId', 'Offer', offers, filters.offerId)}${menu('partnerId', 'Partner', partners, filters.partnerId)}
<div><label for="from">From</label><input id="from" name="from" type="date" value="${filters.from}"></div>
<div><label for="to">To</label><input id="to" name="to" type="date" value="${filters.to}"></div>
<div><label for="txn">Txn id</label><input id="txn" name="txn" value="${filters.txn}"></div>
<div><button type="submit">Filter</button> <a href="/dashboard/conversions">Reset</a></div></form>
${problems.length > 0 ? html`<div class="flash error" role="alert">${problems.join(' ')} That filter was ignored.</div>` : ''}
<form method="post" action="/dashboard/conversions/bulk">${csrfField(session)}<input type="hidden" name="back" value="${request.url}">
<button type="submit" disabled hidden tabindex="-1" aria-hidden="true"></button>
${
  anyPending
    ? html`<div class="bulkbar"><span data-selection-count class="muted">Select pending conversions to decide several at once.</span>
<div class="inline-form"><div><label for="reason">Rejection reason (optional)</label><input id="reason" name="reason" maxlength="500"></div><button type="submit" name="action" value="approve" data-needs-selection>Approve selected</button>
<button type="submit" name="action" value="reject" class="danger" data-needs-selection>Reject selected</button></div></div>`
    : ''
}
<div class="table-wrap">${table}</div></form>${pager('/dashboard/conversions', query, page.nextCursor)}`,
    });
  });

  app.get('/conversions/:id', async (request, reply) => {
    const session = sessionOf(request);
    const { brand } = session;
    const c = await findConversion(ctx.db.read, brand.id, pathId(request));
    if (!c) return notFound(reply, request, 'conversion');
    const [offers, partners] = await Promise.all([
      offerNames(ctx.db.read, brand.id, [c.offer_id]),
      partnerNames(ctx.db.read, brand.id, [c.partner_id]),
    ]);
    const tz = brand.timezone;
    const subs = [c.sub1, c.sub2, c.sub3, c.sub4, c.sub5].map((s, i) => (s ? `sub${i + 1}=${s}` : '')).filter(Boolean);
    return render(ctx, request, reply, {
      title: `Conversion ${c.id}`,
      section: 'conversions',
      body: () => html`<p><a href="/dashboard/conversions">« Conversions</a></p>
<div class="head"><h1>Conversion ${statusCell(c, tz)}</h1></div>
<section class="panel" aria-label="Details"><dl class="props">
<dt>Id</dt><dd class="mono">${c.id}</dd>
<dt>Offer</dt><dd><a href="/dashboard/offers/${c.offer_id}">${offers.get(c.offer_id) ?? c.offer_id}</a></dd>
<dt>Partner</dt><dd><a href="/dashboard/partners/${c.partner_id}">${partners.get(c.partner_id) ?? c.partner_id}</a></dd>
<dt>Click</dt><dd class="mono">${c.click_id ?? '—'}</dd>
<dt>Revenue</dt><dd>${money(c.revenue_cents, c.currency)}</dd><dt>Payout</dt><dd>${money(c.payout_cents, c.currency)}</dd>
<dt>Transaction id</dt><dd class="mono">${c.external_txn_id ?? '—'}</dd><dt>Sub ids</dt><dd class="mono">${subs.join(' ') || '—'}</dd>
<dt>Recorded</dt><dd>${time(c.created_at, tz)}</dd><dt>Hold until</dt><dd>${time(c.hold_until, tz)}</dd>
<dt>Approved</dt><dd>${time(c.approved_at, tz)}${c.approved_by ? ` (${c.approved_by === 'manual' ? 'by a person' : 'after the hold time'})` : ''}</dd>
<dt>Rejected</dt><dd>${time(c.rejected_at, tz)}${c.rejection_reason ? ` — ${c.rejection_reason}` : ''}</dd></dl></section>
${
  c.status === 'pending'
    ? html`<section class="panel" aria-labelledby="decide-h"><h2 id="decide-h">Decide</h2><div class="actions">
${actionButton(session, `/dashboard/conversions/${c.id}/approve`, 'Approve')}
<form method="post" action="/dashboard/conversions/${c.id}/reject" class="actions">${csrfField(session)}
<label for="reason" class="visually-hidden">Rejection reason</label><input id="reason" name="reason" maxlength="500" placeholder="Reason (optional)">
<button type="submit" class="danger">Reject</button></form></div></section>`
    : ''
}`,
    });
  });
}
