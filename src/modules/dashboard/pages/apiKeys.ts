/** API keys: create (the secret shown once, with a copy button), list, revoke. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { insertApiKey, listApiKeys, revokeApiKey } from '../../apiKeys/service.js';
import { actionButton, badge, copyField, csrfField, emptyState, pager } from '../components.js';
import { time } from '../format.js';
import { FormView, field, formBody, valuesOf } from '../forms.js';
import { html, type SafeHtml } from '../html.js';
import { formError, pathId, queryParam, render, runAction } from '../respond.js';
import { sessionOf } from '../session.js';
import { settingsTabs } from './settingsNav.js';

const PAGE_SIZE = 25;
const MAX_NAME_LENGTH = 100;

export function apiKeyPages(app: FastifyInstance, ctx: AppContext): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    options: {
      created?: { name: string; secret: string };
      values?: Record<string, string | string[]>;
      error?: ApiError;
    } = {},
  ) => {
    const { brand } = sessionOf(request);
    const cursor = queryParam(request, 'cursor') || undefined;
    // listApiKeys returns the brand's keys newest first; a brand has few, so they page in memory.
    const all = await listApiKeys(ctx.db, brand.id);
    const page = toPage(all.filter((k) => !cursor || k.id < cursor).slice(0, PAGE_SIZE + 1), PAGE_SIZE, (r) => r);
    const tz = brand.timezone;
    return render(ctx, request, reply, {
      title: 'API keys',
      section: 'settings',
      status: options.error ? options.error.status : 200,
      flash: options.created ? { kind: 'ok', text: `API key “${options.created.name}” created.` } : undefined,
      body: (session): SafeHtml => {
        const f = new FormView(options.values ?? { name: '' }, { name: 'Key name' }, options.error);
        const rows = page.data.map(
          (
            k,
          ) => html`<tr><th scope="row">${k.name}</th><td class="mono">${k.prefix}…</td><td>${time(k.created_at, tz)}</td>
<td>${k.last_used_at === null ? html`<span class="muted">never</span>` : time(k.last_used_at, tz)}</td>
<td>${k.revoked_at === null ? badge('active') : html`${badge('revoked')} <span class="small muted">${time(k.revoked_at, tz)}</span>`}</td>
<td>${k.revoked_at === null ? actionButton(session, `/dashboard/settings/api-keys/${k.id}/revoke`, 'Revoke', { small: true, tone: 'danger', confirm: `Revoke “${k.name}”? Requests with it get 401 at once.` }) : ''}</td></tr>`,
        );
        return html`<h1>Settings</h1>${settingsTabs('keys')}
${
  options.created
    ? html`<section class="secret" aria-labelledby="key-h"><h2 id="key-h">Your new API key</h2>
<p><strong>Copy it now: it is shown only once</strong> and stored only as a hash. Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
${copyField('new-key', `API key “${options.created.name}”`, options.created.secret)}</section>`
    : ''
}
<section class="panel" aria-labelledby="create-h"><h2 id="create-h">Create a key</h2>${f.summary()}
<form method="post" action="/dashboard/settings/api-keys" class="inline-form" novalidate>${csrfField(session)}
${f.input('name', { required: true, attrs: html` maxlength="${MAX_NAME_LENGTH}" placeholder="e.g. Order system"` })}<button type="submit">Create key</button></form></section>
<div class="table-wrap">${
          rows.length === 0
            ? emptyState('No API keys', 'Create one to call the API.')
            : html`<table><caption class="visually-hidden">API keys</caption><thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>`
        }</div>${pager('/dashboard/settings/api-keys', { cursor }, page.nextCursor)}`;
      },
    });
  };

  app.get('/settings/api-keys', async (request, reply) => show(request, reply));

  app.post('/settings/api-keys', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    const name = field(form, 'name');
    try {
      if (!name || name.length > MAX_NAME_LENGTH) {
        throw ApiError.validation([{ path: 'name', message: `must be 1 to ${MAX_NAME_LENGTH} characters` }]);
      }
      const { secret } = await ctx.db.transact((trx) => insertApiKey(trx, ctx.clock, { brandId: brand.id, name }));
      // Answered directly, not by redirect: the secret must not travel in a URL or cookie.
      return await show(request, reply, { created: { name, secret } });
    } catch (error) {
      return show(request, reply, { values: valuesOf(form), error: formError(error) });
    }
  });

  app.post('/settings/api-keys/:id/revoke', async (request, reply) => {
    const { brand } = sessionOf(request);
    return runAction(ctx, request, reply, '/dashboard/settings/api-keys', async () => {
      const row = await revokeApiKey(ctx.db, ctx.clock, pathId(request), brand.id);
      if (!row) throw ApiError.notFound('API key');
      return `API key “${row.name}” revoked; requests with it now get 401.`;
    });
  });
}
