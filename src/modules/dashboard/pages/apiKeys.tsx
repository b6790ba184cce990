/** API keys: create (the secret shown once, with a copy button), list, revoke. */
import { escapeHtml } from '@kitajs/html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { ALREADY_CREATED, claimForm, FormIdField } from '../../../web/sentOnce.js';
import { type FormValues, FormView, formError } from '../../../web/views/form.js';
import { insertApiKey, listApiKeys, revokeApiKey } from '../../apiKeys/service.js';
import { count } from '../format.js';
import { Cursor, Field, FormBody, IdParams, Query, text } from '../forms.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, Badge, CopyField, CsrfField, EmptyState, Pager, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';
import { SettingsTabs } from './settingsNav.js';

const PAGE_SIZE = 25;
const MAX_NAME_LENGTH = 100;
const ListQuery = Query({ cursor: Cursor });
const KeyForm = FormBody({ name: Field, formId: Field });

export function apiKeyPages(app: DashboardApp, ctx: AppContext): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    options: {
      cursor?: string;
      created?: { name: string; secret: string };
      values?: FormValues;
      error?: ApiError;
    } = {},
  ) => {
    const { brand } = sessionOf(request);
    const { cursor } = options;
    // listApiKeys returns the brand's keys newest first; a brand has few, so they page in memory.
    const all = await listApiKeys(ctx.db, brand.id);
    const page = toPage(all.filter((k) => !cursor || k.id < cursor).slice(0, PAGE_SIZE + 1), PAGE_SIZE, (r) => r);
    const tz = brand.timezone;
    const created = options.created;
    return render(request, reply, {
      title: 'API keys',
      section: 'settings',
      status: options.error ? options.error.status : 200,
      flash: created ? { kind: 'ok', text: `API key “${created.name}” created.` } : undefined,
      body: (session) => {
        const f = new FormView(options.values ?? { name: '' }, { name: 'Key name' }, options.error);
        return (
          <>
            <h1>Settings</h1>
            <SettingsTabs current="keys" />
            {created ? (
              <section class="secret" aria-labelledby="key-h">
                <h2 id="key-h">Your new API key</h2>
                <p>
                  <strong>Copy it now: it is shown only once</strong> and stored only as a hash. Send it as{' '}
                  <code>Authorization: Bearer {escapeHtml('<key>')}</code>.
                </p>
                <CopyField id="new-key" label={`API key “${created.name}”`} value={created.secret} />
              </section>
            ) : (
              ''
            )}
            <section class="panel" aria-labelledby="create-h">
              <h2 id="create-h">Create a key</h2>
              {f.summary()}
              <form method="post" action="/dashboard/settings/api-keys" class="inline-form" novalidate>
                <CsrfField token={session.csrfToken} />
                <FormIdField />
                {f.input('name', {
                  required: true,
                  attrs: { maxlength: String(MAX_NAME_LENGTH), placeholder: 'e.g. Order system' },
                })}
                <button type="submit">Create key</button>
              </form>
            </section>
            <Table
              caption="API keys"
              columns={['Name', 'Prefix', num('Rate limit'), 'Created', 'Last used', 'Status', 'Actions']}
              rows={page.data.map((k) => [
                { rowHeader: true, text: k.name },
                { class: 'mono', text: `${k.prefix}…` },
                { class: 'num', text: `${count(k.rate_limit_per_minute ?? ctx.config.rateLimitPerMinute)}/min` },
                { html: <Time ms={k.created_at} timeZone={tz} /> },
                {
                  html: (
                    <>
                      {k.last_used_at === null ? (
                        <span class="muted">never</span>
                      ) : (
                        <Time ms={k.last_used_at} timeZone={tz} />
                      )}
                    </>
                  ),
                },
                {
                  html: (
                    <>
                      {k.revoked_at === null ? (
                        <Badge status="active" />
                      ) : (
                        <>
                          <Badge status="revoked" />{' '}
                          <span class="small muted">
                            <Time ms={k.revoked_at} timeZone={tz} />
                          </span>
                        </>
                      )}
                    </>
                  ),
                },
                {
                  html: (
                    <>
                      {k.revoked_at === null ? (
                        <ActionButton
                          csrf={session.csrfToken}
                          action={`/dashboard/settings/api-keys/${k.id}/revoke`}
                          label="Revoke"
                          small
                          tone="danger"
                          row={`${k.name} (${k.prefix}…)`}
                          confirm={`Revoke “${k.name}”? Requests with it get 401 at once.`}
                        />
                      ) : (
                        ''
                      )}
                    </>
                  ),
                },
              ])}
              empty={<EmptyState title="No API keys">Create one to call the API.</EmptyState>}
            />
            <Pager path="/dashboard/settings/api-keys" query={{ cursor }} nextCursor={page.nextCursor} />
          </>
        );
      },
    });
  };

  app.get('/settings/api-keys', { schema: { querystring: ListQuery } }, async (request, reply) =>
    show(request, reply, { cursor: request.query.cursor || undefined }),
  );

  app.post('/settings/api-keys', { schema: { body: KeyForm } }, async (request, reply) => {
    const { brand, userId } = sessionOf(request);
    const name = text(request.body.name);
    if (!(await claimForm(ctx, `dashboard:${userId}`, request.body.formId))) {
      return redirectWithFlash(reply, '/dashboard/settings/api-keys', { kind: 'error', text: ALREADY_CREATED('key') });
    }
    try {
      if (!name || name.length > MAX_NAME_LENGTH) {
        throw ApiError.validation([{ path: 'name', message: `must be 1 to ${MAX_NAME_LENGTH} characters` }]);
      }
      const { secret } = await ctx.db.transact((trx) => insertApiKey(trx, ctx.clock, { brandId: brand.id, name }));
      // Answered directly, not by redirect: the secret must not travel in a URL or cookie.
      return await show(request, reply, { created: { name, secret } });
    } catch (error) {
      return show(request, reply, { values: request.body, error: formError(error) });
    }
  });

  app.post(
    '/settings/api-keys/:id/revoke',
    { schema: { params: IdParams, body: FormBody({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      return runAction(request, reply, '/dashboard/settings/api-keys', async () => {
        const row = await revokeApiKey(ctx.db, ctx.clock, request.params.id, brand.id);
        if (!row) throw ApiError.notFound('API key');
        return `API key “${row.name}” revoked; requests with it now get 401.`;
      });
    },
  );
}
