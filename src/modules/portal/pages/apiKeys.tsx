/** The partner's API keys: create (shown once, with a Copy button), list, revoke. */
import { escapeHtml } from '@kitajs/html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { InvalidError } from '../../../errors.js';
import { type ApiError, toApiError } from '../../../http/errors.js';
import { ALREADY_CREATED, claimForm, FormIdField } from '../../../web/sentOnce.js';
import { FormView } from '../../../web/views/form.js';
import { Field, FormBody, IdParams, Query, text } from '../../dashboard/forms.js';
import { redirectWithFlash } from '../../dashboard/session.js';
import { ActionButton, Badge, CopyField, CsrfField, EmptyState, Time } from '../../dashboard/views/components.js';
import { Table } from '../../dashboard/views/table.js';
import { createPartnerKey, listPartnerKeys, MAX_KEY_NAME_LENGTH, revokePartnerKey } from '../../partnerKeys/service.js';
import { type PortalApp, renderPortal, runPortalAction } from '../respond.js';
import { partnerSessionOf } from '../web.js';

const KeyForm = FormBody({ name: Field, formId: Field });

export function apiKeyPages(app: PortalApp, ctx: AppContext): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    options: { created?: { name: string; secret: string }; error?: ApiError; name?: string } = {},
  ) => {
    const session = partnerSessionOf(request);
    const keys = await listPartnerKeys(ctx.db.read, { brandId: session.brand.id, partnerId: session.partner.id });
    const tz = session.brand.timezone;
    const { created, error } = options;
    return renderPortal(request, reply, {
      title: 'API keys',
      section: 'api-keys',
      status: error ? error.status : 200,
      flash: created ? { kind: 'ok', text: `API key “${created.name}” created.` } : undefined,
      body: (_, csrf) => {
        const form = new FormView({ name: options.name ?? '' }, { name: 'Key name' }, error);
        return (
          <>
            <h1>API keys</h1>
            <p>
              Read your report, conversions and offers from your own systems:{' '}
              <code safe>{`GET ${ctx.config.publicUrl}/api/v1/partner/report`}</code>,{' '}
              <code>/api/v1/partner/conversions</code>, <code>/api/v1/partner/offers</code> with{' '}
              <code>Authorization: Bearer {escapeHtml('<key>')}</code>. See <a href="/docs">the API reference</a>.
            </p>
            {created ? (
              <section class="secret" aria-labelledby="key-h">
                <h2 id="key-h">Your new API key</h2>
                <p>
                  <strong>Copy it now: it is shown only once</strong> and stored only as a hash.
                </p>
                <CopyField id="new-key" label={`API key “${created.name}”`} value={created.secret} />
              </section>
            ) : (
              ''
            )}
            <Table
              caption="Your API keys"
              columns={['Name', 'Key', 'Created', 'Last used', 'Status', 'Actions']}
              rows={keys.map((k) => [
                { text: k.name },
                { class: 'mono', text: `${k.prefix}…` },
                { html: <Time ms={k.created_at} timeZone={tz} /> },
                { html: <Time ms={k.last_used_at} timeZone={tz} /> },
                { html: <Badge status={k.revoked_at === null ? 'active' : 'revoked'} /> },
                {
                  html: (
                    <>
                      {k.revoked_at === null ? (
                        <ActionButton
                          csrf={csrf}
                          action={`/portal/api-keys/${k.id}/revoke`}
                          label="Revoke"
                          tone="danger"
                          small
                          row={`${k.name} (${k.prefix}…)`}
                          confirm="Revoke this key? Programs using it stop working."
                        />
                      ) : (
                        ''
                      )}
                    </>
                  ),
                },
              ])}
              empty={<EmptyState title="No API key yet." />}
            />
            <h2>Create a key</h2>
            {form.summary()}
            <form method="post" action="/portal/api-keys" class="stack">
              <CsrfField token={csrf} />
              <FormIdField />
              {form.input('name', {
                attrs: { maxlength: String(MAX_KEY_NAME_LENGTH), placeholder: 'e.g. Reporting script' },
              })}
              <div>
                <button type="submit">Create key</button>
              </div>
            </form>
          </>
        );
      },
    });
  };

  app.get('/api-keys', { schema: { querystring: Query({}) } }, (request, reply) => show(request, reply));

  app.post('/api-keys', { schema: { body: KeyForm } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const name = text(request.body.name);
    if (!(await claimForm(ctx, `portal:${session.partner.id}`, request.body.formId))) {
      return redirectWithFlash(reply, '/portal/api-keys', { kind: 'error', text: ALREADY_CREATED('key') });
    }
    try {
      const { key, secret } = await createPartnerKey(
        ctx,
        { brandId: session.brand.id, partnerId: session.partner.id },
        name,
      );
      return show(request, reply, { created: { name: key.name, secret } });
    } catch (error) {
      if (error instanceof InvalidError) return show(request, reply, { error: toApiError(error), name });
      throw error;
    }
  });

  app.post('/api-keys/:id/revoke', { schema: { params: IdParams, body: FormBody({}) } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    return runPortalAction(request, reply, '/portal/api-keys', async () => {
      const row = await revokePartnerKey(
        ctx,
        { brandId: session.brand.id, partnerId: session.partner.id },
        request.params.id,
      );
      return `API key “${row.name}” revoked.`;
    });
  });
}
