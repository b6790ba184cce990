/** The delivery log (webhooks and postback sends): filters, each delivery's attempts, redeliver. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { findDelivery, listAttempts, listDeliveries } from '../../webhooks/repository.js';
import { redeliver } from '../../webhooks/service.js';
import { actionButton, badge, emptyState, link, pager } from '../components.js';
import { notFound } from '../errors.js';
import { count, time } from '../format.js';
import { html } from '../html.js';
import { deliveryTargets, eventPayload } from '../repository.js';
import { pathId, queryParam, render, runAction } from '../respond.js';
import { sessionOf } from '../session.js';

const PAGE_SIZE = 50;
const STATUSES = ['attempting', 'retry_scheduled', 'succeeded', 'failed'] as const;
const KINDS = ['webhook', 'postback'] as const;

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function deliveryPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/deliveries', async (request, reply) => {
    const { brand } = sessionOf(request);
    const filters = {
      status: STATUSES.find((s) => s === queryParam(request, 'status')),
      kind: KINDS.find((k) => k === queryParam(request, 'kind')),
      subscription: queryParam(request, 'subscription', 64) || undefined,
    };
    const cursor = queryParam(request, 'cursor') || undefined;
    const rows = await listDeliveries(ctx.db.read, brand.id, {
      status: filters.status,
      kind: filters.kind,
      subscriptionId: filters.subscription,
      cursor,
      limit: PAGE_SIZE,
    });
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const targets = await deliveryTargets(
      ctx.db.read,
      brand.id,
      page.data.map((d) => d.subscription_id),
    );
    const tz = brand.timezone;
    const body = page.data.map(
      (
        d,
      ) => html`<tr><td><a href="/dashboard/deliveries/${d.id}">${time(d.created_at, tz)}</a><br><span class="muted small mono">${d.id}</span></td>
<td>${d.kind}</td><td>${d.event}</td><td class="mono small">${d.target_url ?? targets.get(d.subscription_id) ?? d.subscription_id}</td>
<td>${badge(d.status)}</td><td class="num">${count(d.attempt_count)}</td><td>${d.next_attempt_at === null ? '—' : time(d.next_attempt_at, tz)}</td></tr>`,
    );
    const filtered = Boolean(filters.status || filters.kind || filters.subscription);
    const table =
      body.length === 0
        ? emptyState(
            filtered ? 'No deliveries match these filters' : 'Nothing delivered yet',
            filtered
              ? html`<a href="/dashboard/deliveries">Show every delivery</a>.`
              : 'Webhooks and partner postbacks appear here as events happen.',
          )
        : html`<table><caption class="visually-hidden">Deliveries</caption><thead><tr><th scope="col">Queued</th><th scope="col">Kind</th><th scope="col">Event</th><th scope="col">Target</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Next attempt</th></tr></thead><tbody>${body}</tbody></table>`;
    const option = (value: string, current: string | undefined, label = value.replace('_', ' ')) =>
      html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`;
    return render(ctx, request, reply, {
      title: 'Delivery log',
      section: 'deliveries',
      body: () => html`<h1>Delivery log</h1>
<form method="get" action="/dashboard/deliveries" class="filters" aria-label="Filters">
<div><label for="status">Status</label><select id="status" name="status"><option value="">All</option>${STATUSES.map((s) => option(s, filters.status))}</select></div>
<div><label for="kind">Kind</label><select id="kind" name="kind"><option value="">Webhooks and postbacks</option>${KINDS.map((k) => option(k, filters.kind, `${k}s`))}</select></div>
${filters.subscription ? html`<input type="hidden" name="subscription" value="${filters.subscription}"><p class="small">Subscription <span class="mono">${filters.subscription}</span> · <a href="${link('/dashboard/deliveries', { status: filters.status, kind: filters.kind })}">all subscriptions</a></p>` : ''}
<div><button type="submit">Filter</button></div></form>
<div class="table-wrap">${table}</div>${pager('/dashboard/deliveries', { ...filters, cursor }, page.nextCursor)}`,
    });
  });

  app.get('/deliveries/:id', async (request, reply) => {
    const session = sessionOf(request);
    const { brand } = session;
    const d = await findDelivery(ctx.db.read, brand.id, pathId(request));
    if (!d) return notFound(reply, request, 'delivery');
    const [attempts, payload, targets] = await Promise.all([
      listAttempts(ctx.db.read, d.id),
      eventPayload(ctx.db.read, brand.id, d.event_id),
      deliveryTargets(ctx.db.read, brand.id, [d.subscription_id]),
    ]);
    const tz = brand.timezone;
    const target = d.target_url ?? targets.get(d.subscription_id) ?? '';
    const rows = [...attempts].reverse().map(
      (a) => html`<tr><th scope="row" class="num">${a.number}</th><td>${time(a.attempted_at, tz)}</td>
<td>${a.status_code === null ? html`<span class="muted">no answer</span>` : badge(a.status_code >= 200 && a.status_code < 300 ? 'succeeded' : 'failed', String(a.status_code))}</td>
<td class="num">${count(a.latency_ms)} ms</td><td>${a.error ?? ''}${a.response_body ? html`<pre>${a.response_body}</pre>` : a.error ? '' : html`<span class="muted">empty body</span>`}</td></tr>`,
    );
    const finished = d.status === 'succeeded' || d.status === 'failed';
    return render(ctx, request, reply, {
      title: `Delivery ${d.id}`,
      section: 'deliveries',
      body: () => html`<p><a href="/dashboard/deliveries">« Delivery log</a></p>
<div class="head"><h1>Delivery ${badge(d.status)}</h1>${finished ? actionButton(session, `/dashboard/deliveries/${d.id}/redeliver`, 'Redeliver') : html`<p class="muted">Redelivery is possible once this delivery has succeeded or failed.</p>`}</div>
<section class="panel" aria-label="Details"><dl class="props">
<dt>Delivery id</dt><dd class="mono">${d.id}</dd><dt>Kind</dt><dd>${d.kind === 'webhook' ? 'Webhook (POST)' : `Partner postback (${d.method ?? 'GET'})`}</dd>
<dt>Event</dt><dd>${d.event} <span class="mono small muted">${d.event_id}</span></dd><dt>Target</dt><dd class="mono">${target}</dd>
<dt>Queued</dt><dd>${time(d.created_at, tz)}</dd><dt>Next attempt</dt><dd>${time(d.next_attempt_at, tz)}</dd></dl>
${payload && d.kind === 'webhook' ? html`<details><summary>Request body (formatted)</summary><pre>${prettyJson(payload)}</pre></details>` : ''}</section>
<h2>Attempts</h2>
<div class="table-wrap">${
        rows.length === 0
          ? emptyState('No attempts yet', 'The first attempt is made right after the event commits.')
          : html`<table><caption class="visually-hidden">Attempts, newest first</caption><thead><tr><th scope="col" class="num">#</th><th scope="col">Time</th><th scope="col">Status code</th><th scope="col" class="num">Latency</th><th scope="col">Response body / error</th></tr></thead><tbody>${rows}</tbody></table>`
      }</div>`,
    });
  });

  app.post('/deliveries/:id/redeliver', async (request, reply) => {
    const { brand } = sessionOf(request);
    const id = pathId(request);
    return runAction(ctx, request, reply, `/dashboard/deliveries/${id}`, async () => {
      await redeliver(ctx, brand.id, id);
      return 'Queued for redelivery: the same delivery id and body are sent again.';
    });
  });
}
