/** Webhook subscriptions: list, create (secret shown once), edit, disable, delete. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { findSubscription, listSubscriptions, type SubscriptionRow } from '../../webhooks/repository.js';
import { CreateSubscriptionBody, UpdateSubscriptionBody } from '../../webhooks/schemas.js';
import { createSubscription, deleteSubscription, updateSubscription } from '../../webhooks/service.js';
import { actionButton, badge, emptyState, pager } from '../components.js';
import { notFound } from '../errors.js';
import { time } from '../format.js';
import { type FormValues, field, formBody, validateAgainst, valuesOf } from '../forms.js';
import { html, type SafeHtml } from '../html.js';
import { formError, pathId, queryParam, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import {
  generateSecret,
  secretNotice,
  subscriptionForm,
  subscriptionInput,
  subscriptionValues,
} from './webhookForm.js';

const PAGE_SIZE = 25;

export function webhookPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/webhooks', async (request, reply) => {
    const session = sessionOf(request);
    const cursor = queryParam(request, 'cursor') || undefined;
    const page = toPage(
      await listSubscriptions(ctx.db.read, session.brand.id, { cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const rows = page.data.map((s) => {
      const next = s.status === 'active' ? 'disabled' : 'active';
      return html`<tr><th scope="row"><a href="/dashboard/webhooks/${s.id}" class="mono">${s.url}</a><br><span class="muted small mono">${s.id}</span></th>
<td>${(JSON.parse(s.events) as string[]).map((e) => html`<span class="badge">${e}</span> `)}</td><td>${badge(s.status)}</td><td>${s.secret ? 'Signed' : 'Unsigned'}</td>
<td>${time(s.created_at, session.brand.timezone)}</td>
<td><div class="actions"><a href="/dashboard/deliveries?subscription=${s.id}">Deliveries</a>
${actionButton(session, `/dashboard/webhooks/${s.id}/status`, next === 'disabled' ? 'Disable' : 'Enable', { small: true, tone: 'secondary', fields: { status: next } })}
${actionButton(session, `/dashboard/webhooks/${s.id}/delete`, 'Delete', { small: true, tone: 'danger', confirm: `Delete the subscription to ${s.url} and its delivery log?` })}</div></td></tr>`;
    });
    const table =
      rows.length === 0
        ? emptyState(
            'No subscriptions yet',
            html`<a href="/dashboard/webhooks/new">Subscribe an endpoint</a> to hear about conversions, partners and fraud.`,
          )
        : html`<table><caption class="visually-hidden">Webhook subscriptions</caption><thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Signature</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>`;
    return render(ctx, request, reply, {
      title: 'Webhooks',
      section: 'webhooks',
      body: () => html`<div class="head"><h1>Webhooks</h1><div class="actions"><a class="btn secondary" href="/dashboard/deliveries">Delivery log</a><a class="btn" href="/dashboard/webhooks/new">New subscription</a></div></div>
<div class="table-wrap">${table}</div>${pager('/dashboard/webhooks', { cursor }, page.nextCursor)}`,
    });
  });

  const showNew = (request: FastifyRequest, reply: FastifyReply, values: FormValues, error?: ApiError) =>
    render(ctx, request, reply, {
      title: 'New subscription',
      section: 'webhooks',
      status: error ? error.status : 200,
      body: (session) => html`<p><a href="/dashboard/webhooks">« Webhooks</a></p><h1>New subscription</h1>
${subscriptionForm(session, '/dashboard/webhooks', values, error, 'create')}`,
    });

  app.get('/webhooks/new', async (request, reply) => showNew(request, reply, subscriptionValues(null)));

  app.post('/webhooks', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    try {
      const input = { ...subscriptionInput(form), secret: generateSecret() };
      validateAgainst(CreateSubscriptionBody, input);
      const row = await createSubscription(ctx, brand.id, input as typeof CreateSubscriptionBody.static);
      return showSaved(request, reply, row, input.secret, 'Subscription created.');
    } catch (error) {
      return showNew(request, reply, valuesOf(form), formError(error));
    }
  });

  /** The answer to a save that made a secret: shown on this response only, never stored for display. */
  const showSaved = (
    request: FastifyRequest,
    reply: FastifyReply,
    row: SubscriptionRow,
    secret: string,
    text: string,
  ) =>
    render(ctx, request, reply, {
      title: 'Subscription saved',
      section: 'webhooks',
      flash: { kind: 'ok', text },
      body: () => html`<p><a href="/dashboard/webhooks">« Webhooks</a></p><h1>Subscription saved</h1>${secretNotice(secret, row.url)}
<p><a class="btn" href="/dashboard/webhooks">Done</a> <a href="/dashboard/webhooks/${row.id}">Edit the subscription</a></p>`,
    });

  const showEdit = (
    request: FastifyRequest,
    reply: FastifyReply,
    row: SubscriptionRow,
    values?: FormValues,
    error?: ApiError,
  ) =>
    render(ctx, request, reply, {
      title: 'Edit subscription',
      section: 'webhooks',
      status: error ? error.status : 200,
      body: (session): SafeHtml => html`<p><a href="/dashboard/webhooks">« Webhooks</a></p>
<div class="head"><h1>Subscription ${badge(row.status)}</h1><div class="actions"><a class="btn secondary" href="/dashboard/deliveries?subscription=${row.id}">Deliveries</a>
${actionButton(session, `/dashboard/webhooks/${row.id}/delete`, 'Delete', { tone: 'danger', confirm: 'Delete this subscription and its delivery log?' })}</div></div>
<p class="muted small"><span class="mono">${row.id}</span> · created ${time(row.created_at, session.brand.timezone)} · ${row.secret ? 'deliveries are signed' : 'deliveries are not signed'}</p>
<section class="panel">${subscriptionForm(session, `/dashboard/webhooks/${row.id}`, values ?? subscriptionValues(row), error, 'edit')}</section>`,
    });

  app.get('/webhooks/:id', async (request, reply) => {
    const row = await findSubscription(ctx.db.read, sessionOf(request).brand.id, pathId(request));
    if (!row) return notFound(reply, request, 'subscription');
    return showEdit(request, reply, row);
  });

  app.post('/webhooks/:id', async (request, reply) => {
    const { brand } = sessionOf(request);
    const existing = await findSubscription(ctx.db.read, brand.id, pathId(request));
    if (!existing) return notFound(reply, request, 'subscription');
    const form = formBody(request.body);
    const secret = field(form, 'rotateSecret') ? generateSecret() : undefined;
    try {
      const input = { ...subscriptionInput(form), status: field(form, 'status'), ...(secret ? { secret } : {}) };
      validateAgainst(UpdateSubscriptionBody, input);
      const row = await updateSubscription(ctx, brand.id, existing.id, input as typeof UpdateSubscriptionBody.static);
      if (secret) return showSaved(request, reply, row, secret, 'Subscription saved with a new signing secret.');
      return redirectWithFlash(ctx, reply, '/dashboard/webhooks', { kind: 'ok', text: 'Subscription saved.' });
    } catch (error) {
      return showEdit(request, reply, existing, valuesOf(form), formError(error));
    }
  });

  app.post('/webhooks/:id/status', async (request, reply) => {
    const { brand } = sessionOf(request);
    const status = field(formBody(request.body), 'status') === 'active' ? 'active' : 'disabled';
    return runAction(ctx, request, reply, '/dashboard/webhooks', async () => {
      const row = await updateSubscription(ctx, brand.id, pathId(request), { status });
      return status === 'active' ? `Deliveries to ${row.url} resume.` : `Deliveries to ${row.url} are paused.`;
    });
  });

  app.post('/webhooks/:id/delete', async (request, reply) => {
    const { brand } = sessionOf(request);
    return runAction(ctx, request, reply, '/dashboard/webhooks', async () => {
      await deleteSubscription(ctx, brand.id, pathId(request));
      return 'Subscription deleted.';
    });
  });
}
