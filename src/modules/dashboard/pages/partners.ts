/** Partners: list by status, applicant review (approve, ban with a reason), partner page. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { listOffers } from '../../offers/repository.js';
import { findPartner, listPartners, type PartnerRow } from '../../partners/repository.js';
import { BanBody } from '../../partners/schemas.js';
import { approvePartner, banPartner } from '../../partners/service.js';
import { listPostbacks } from '../../postbacks/service.js';
import type { DashboardSession } from '../../users/sessions.js';
import { actionButton, badge, copyField, csrfField, emptyState, pager, tabs } from '../components.js';
import { notFound } from '../errors.js';
import { count, time } from '../format.js';
import { field, formBody, validateAgainst } from '../forms.js';
import { html, type SafeHtml } from '../html.js';
import { countByStatus, offerNames, recentPostbackSends } from '../repository.js';
import { pathId, queryParam, render, runAction } from '../respond.js';
import { safeDashboardPath, sessionOf } from '../session.js';

const PAGE_SIZE = 25;
const RECENT_SENDS = 20;
const STATUSES = ['applicant', 'active', 'banned'] as const;
const STATUS_LABELS = { applicant: 'Applicants', active: 'Active', banned: 'Banned' };

function banForm(session: DashboardSession, partner: PartnerRow, back: string): SafeHtml {
  const id = `reason-${partner.id}`;
  return html`<form method="post" action="/dashboard/partners/${partner.id}/ban" class="row-form" data-confirm="Ban ${partner.name}? Their tracking links stop working.">
${csrfField(session)}<input type="hidden" name="back" value="${back}">
<label for="${id}" class="visually-hidden">Reason for banning ${partner.name}</label>
<input id="${id}" name="reason" maxlength="500" placeholder="Reason (optional)">
<button type="submit" class="danger small">Ban</button></form>`;
}

export function partnerPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/partners', async (request, reply) => {
    const session = sessionOf(request);
    const { brand } = session;
    const status = STATUSES.find((s) => s === queryParam(request, 'status'));
    const cursor = queryParam(request, 'cursor') || undefined;
    const [rows, applicants] = await Promise.all([
      listPartners(ctx.db.read, brand.id, { status, cursor, limit: PAGE_SIZE }),
      countByStatus(ctx.db.read, 'partners', brand.id, 'applicant'),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const back = request.url;
    const body = page.data.map(
      (
        p,
      ) => html`<tr><th scope="row"><a href="/dashboard/partners/${p.id}">${p.name}</a><br><span class="muted small">${p.email}</span></th>
<td>${p.website ? html`<span class="mono small">${p.website}</span>` : html`<span class="muted">—</span>`}</td><td>${badge(p.status)}${p.ban_reason ? html`<br><span class="small muted">${p.ban_reason}</span>` : ''}</td>
<td>${time(p.created_at, brand.timezone)}</td>
<td>${p.status === 'applicant' ? html`<div class="actions">${actionButton(session, `/dashboard/partners/${p.id}/approve`, 'Approve', { small: true, fields: { back } })}${banForm(session, p, back)}</div>` : html`<a href="/dashboard/partners/${p.id}">Details</a>`}</td></tr>`,
    );
    const table =
      body.length === 0
        ? emptyState(
            status === 'applicant' ? 'No applications waiting' : 'No partners here yet',
            html`Partners apply through your public form: <a href="${ctx.config.publicUrl}/apply/${brand.slug}">${ctx.config.publicUrl}/apply/${brand.slug}</a>`,
          )
        : html`<table><caption class="visually-hidden">Partners</caption><thead><tr><th scope="col">Partner</th><th scope="col">Website</th><th scope="col">Status</th><th scope="col">Applied</th><th scope="col">Actions</th></tr></thead><tbody>${body}</tbody></table>`;
    return render(ctx, request, reply, {
      title: 'Partners',
      section: 'partners',
      body: () => html`<div class="head"><h1>Partners</h1></div>
${copyField('apply-url', 'Public application form', `${ctx.config.publicUrl}/apply/${brand.slug}`)}
${tabs('Partner status', [
  { href: '/dashboard/partners', text: 'All', current: !status },
  ...STATUSES.map((s) => ({
    href: `/dashboard/partners?status=${s}`,
    text: s === 'applicant' ? `${STATUS_LABELS[s]} (${count(applicants)})` : STATUS_LABELS[s],
    current: status === s,
  })),
])}
<div class="table-wrap">${table}</div>${pager('/dashboard/partners', { status, cursor }, page.nextCursor)}`,
    });
  });

  app.get('/partners/:id', async (request, reply) => {
    const session = sessionOf(request);
    const { brand } = session;
    const partner = await findPartner(ctx.db.read, brand.id, pathId(request));
    if (!partner) return notFound(reply, request, 'partner');
    const templates = await listPostbacks(ctx, brand.id, partner.id);
    const cursor = queryParam(request, 'offers') || undefined;
    const [sends, offers, names] = await Promise.all([
      recentPostbackSends(
        ctx.db.read,
        brand.id,
        templates.map((t) => t.id),
        RECENT_SENDS,
      ),
      listOffers(ctx.db.read, brand.id, { status: 'active', cursor, limit: PAGE_SIZE }),
      offerNames(
        ctx.db.read,
        brand.id,
        templates.flatMap((t) => (t.offer_id ? [t.offer_id] : [])),
      ),
    ]);
    const offerPage = toPage(offers, PAGE_SIZE, (r) => r);
    const tz = brand.timezone;
    const back = `/dashboard/partners/${partner.id}`;
    const postbacks =
      templates.length === 0
        ? emptyState(
            'No postback URLs',
            html`Partners hear about their conversions once you add a URL with <code>POST /api/v1/partners/${partner.id}/postbacks</code>.`,
          )
        : html`<table><caption class="visually-hidden">Postback URLs</caption><thead><tr><th scope="col">URL template</th><th scope="col">Offer</th><th scope="col">Events</th><th scope="col">Added</th></tr></thead><tbody>${templates.map(
            (t) =>
              html`<tr><td class="mono small">${t.url}</td><td>${t.offer_id ? (names.get(t.offer_id) ?? t.offer_id) : 'All offers'}</td><td>${(JSON.parse(t.events) as string[]).join(', ')}</td><td>${time(t.created_at, tz)}</td></tr>`,
          )}</tbody></table>`;
    const sendRows =
      sends.length === 0
        ? emptyState(
            'No postbacks sent yet',
            'Sends appear here as this partner’s conversions are recorded and decided.',
          )
        : html`<table><caption class="visually-hidden">Recent postback sends</caption><thead><tr><th scope="col">Queued</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">URL</th></tr></thead><tbody>${sends.map(
            (d) =>
              html`<tr><td><a href="/dashboard/deliveries/${d.id}">${time(d.created_at, tz)}</a></td><td>${d.event}</td><td>${badge(d.status)}</td><td class="num">${d.attempt_count}</td><td class="mono small">${d.target_url ?? ''}</td></tr>`,
          )}</tbody></table>`;
    const links =
      offerPage.data.length === 0
        ? emptyState('No active offers')
        : html`<table><caption class="visually-hidden">Tracking links</caption><tbody>${offerPage.data.map(
            (o) =>
              html`<tr><th scope="row"><a href="/dashboard/offers/${o.id}">${o.name}</a></th><td>${copyField(`link-${o.id}`, `Tracking link for ${o.name}`, `${ctx.config.publicUrl}/t/${o.id}/${partner.id}`, { visibleLabel: false })}</td></tr>`,
          )}</tbody></table>`;
    return render(ctx, request, reply, {
      title: partner.name,
      section: 'partners',
      body: () => html`<p><a href="/dashboard/partners">« Partners</a></p>
<div class="head"><h1>${partner.name} ${badge(partner.status)}</h1><div class="actions">
${partner.status === 'applicant' ? actionButton(session, `/dashboard/partners/${partner.id}/approve`, 'Approve', { fields: { back } }) : ''}
${partner.status !== 'banned' ? banForm(session, partner, back) : ''}</div></div>
<section class="panel" aria-label="Details"><dl class="props">
<dt>Id</dt><dd class="mono">${partner.id}</dd><dt>Email</dt><dd>${partner.email}</dd><dt>Website</dt><dd>${partner.website ?? '—'}</dd>
<dt>Applied</dt><dd>${time(partner.created_at, tz)}</dd><dt>Approved</dt><dd>${time(partner.approved_at, tz)}</dd>
<dt>Banned</dt><dd>${time(partner.banned_at, tz)}${partner.ban_reason ? ` — ${partner.ban_reason}` : ''}</dd></dl></section>
<h2>Postback URLs</h2><div class="table-wrap">${postbacks}</div>
<h2>Recent postback sends</h2><div class="table-wrap">${sendRows}</div>
${partner.status === 'active' ? html`<h2>Tracking links</h2><div class="table-wrap">${links}</div>${pager(back, { offers: cursor }, offerPage.nextCursor, 'offers')}` : ''}`,
    });
  });

  app.post('/partners/:id/approve', async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = safeDashboardPath(field(formBody(request.body), 'back'), '/dashboard/partners');
    return runAction(ctx, request, reply, back, async () => {
      const row = await approvePartner(ctx, brand.id, pathId(request));
      return `${row.name} is approved and can now send traffic.`;
    });
  });

  app.post('/partners/:id/ban', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    const back = safeDashboardPath(field(form, 'back'), '/dashboard/partners');
    return runAction(ctx, request, reply, back, async () => {
      const input = { reason: field(form, 'reason') || null };
      validateAgainst(BanBody, input);
      const row = await banPartner(ctx, brand.id, pathId(request), input.reason);
      return `${row.name} is banned.`;
    });
  });
}
