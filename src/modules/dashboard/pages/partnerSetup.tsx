/**
 * Setting partners up without the API: add a partner, and add, edit, test and delete the
 * postback URLs a partner hears about its conversions on.
 */
import { escapeHtml } from '@kitajs/html';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { type FormValues, FormView, formError, type RefusedForm } from '../../../web/views/form.js';
import { findPartner, type PartnerRow } from '../../partners/repository.js';
import { CreatePartnerBody } from '../../partners/schemas.js';
import { createPartner } from '../../partners/service.js';
import { CreatePostbackBody } from '../../postbacks/schemas.js';
import {
  createPostback,
  deletePostback,
  listPostbacks,
  type PostbackRow,
  updatePostback,
} from '../../postbacks/service.js';
import { sendTestPostback } from '../../postbacks/testSend.js';
import { type EditableFields, keepConcurrentChanges, LOADED_FIELD, LoadedField } from '../editedFields.js';
import { notFound } from '../errors.js';
import { Field, FormBody, IdParams, ListField, text, validateAgainst } from '../forms.js';
import { type DashboardApp, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, CsrfField } from '../views/components.js';
import { Table } from '../views/table.js';

const PartnerForm = FormBody({ name: Field, email: Field, website: Field });
const PostbackForm = FormBody({ url: Field, offerId: Field, events: ListField, [LOADED_FIELD]: LoadedField });
/** The edit form's fields (editedFields.tsx). */
const POSTBACK_FIELDS: EditableFields = ['url', 'offerId', 'events'];
const PostbackParams = Type.Object({
  id: Type.String({ maxLength: 100 }),
  postbackId: Type.String({ maxLength: 100 }),
});
/** Characters of a test answer shown in the message. */
const TEST_ANSWER_CHARS = 200;

const PARTNER_LABELS = { name: 'Name', email: 'Email', website: 'Website (optional)' };

/** The "Add a partner" form of the Partners page (added partners start active); open when refused. */
export function AddPartnerForm({ csrf, refused }: { csrf: string; refused?: RefusedForm }) {
  const f = new FormView(refused?.values ?? {}, PARTNER_LABELS, refused?.error);
  return (
    <details class="panel" open={refused !== undefined}>
      <summary>Add a partner</summary>
      {f.summary()}
      <form method="post" action="/dashboard/partners/new" class="inline-form" novalidate>
        <CsrfField token={csrf} />
        {f.input('name', { required: true, attrs: { maxlength: '200' } })}
        {f.input('email', { type: 'email', required: true, attrs: { maxlength: '254' } })}
        {f.input('website', { type: 'url', attrs: { maxlength: '2048' } })}
        <button type="submit">Add partner</button>
      </form>
    </details>
  );
}

/** The partner's postback URLs with Edit, Send test and Delete. */
export function PostbackTable(props: {
  csrf: string;
  partnerId: string;
  templates: PostbackRow[];
  offerLabel: (id: string | null) => string;
  empty: JSX.Element;
}) {
  const base = `/dashboard/partners/${props.partnerId}`;
  return (
    <Table
      caption="Postback URLs"
      class="wide"
      columns={['URL template', 'Offer', 'Events', 'Actions']}
      rows={props.templates.map((t) => [
        { class: 'mono small url', text: t.url },
        { class: 'name', text: props.offerLabel(t.offer_id) },
        { text: (JSON.parse(t.events) as string[]).join(', ') },
        {
          html: (
            <div class="actions">
              <a
                class="btn secondary small"
                href={`${base}?edit=${t.id}#postback-form`}
                aria-label={escapeHtml(`Edit ${t.url}`)}
              >
                Edit
              </a>
              <ActionButton
                csrf={props.csrf}
                action={`${base}/postbacks/${t.id}/test`}
                label="Send test"
                small
                row={t.url}
              />
              <ActionButton
                csrf={props.csrf}
                action={`${base}/postbacks/${t.id}/delete`}
                label="Delete"
                tone="danger"
                small
                row={t.url}
                confirm="Delete this postback URL? The partner stops hearing about conversions on it."
              />
            </div>
          ),
        },
      ])}
      empty={props.empty}
    />
  );
}

/** A stored postback URL as its edit form shows it. */
export function postbackValues(row: PostbackRow): FormValues {
  return { url: row.url, offerId: row.offer_id ?? '', events: JSON.parse(row.events) as string[] };
}

function postbackInput(form: { url?: string; offerId?: string; events?: string[] }) {
  const input = { url: text(form.url), offerId: text(form.offerId) || null, events: form.events ?? [] };
  validateAgainst(CreatePostbackBody, input);
  return input as CreatePostbackBody;
}

/** The pages a refused set-up form is shown again on (partners.tsx). */
export interface PartnerViews {
  showList(request: FastifyRequest, reply: FastifyReply, refused: RefusedForm): Promise<FastifyReply>;
  showPartner(
    request: FastifyRequest,
    reply: FastifyReply,
    partner: PartnerRow,
    options: { editing?: string; refused: RefusedForm },
  ): Promise<FastifyReply>;
}

export function partnerSetupRoutes(app: DashboardApp, ctx: AppContext, views: PartnerViews): void {
  app.post('/partners/new', { schema: { body: PartnerForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const input = {
      name: text(request.body.name),
      email: text(request.body.email),
      website: text(request.body.website) || null,
    };
    try {
      validateAgainst(CreatePartnerBody, input);
      const row = await createPartner(ctx, brand.id, input);
      return redirectWithFlash(reply, `/dashboard/partners/${row.id}`, {
        kind: 'ok',
        text: `${row.name} is added and active.`,
      });
    } catch (error) {
      return views.showList(request, reply, { values: request.body, error: formError(error) });
    }
  });

  /** Adds a template, or saves `postbackId`; a refusal shows the partner page with the form as sent. */
  const savePostback = async (
    request: FastifyRequest,
    reply: FastifyReply,
    body: Static<typeof PostbackForm>,
    partnerId: string,
    postbackId?: string,
  ) => {
    const { brand } = sessionOf(request);
    const partner = await findPartner(ctx.db.read, brand.id, partnerId);
    if (!partner) return notFound(reply, request, 'partner');
    const { [LOADED_FIELD]: loaded, ...submitted } = body;
    let form = submitted;
    if (postbackId) {
      const current = (await listPostbacks(ctx, brand.id, partner.id)).find((t) => t.id === postbackId);
      if (!current) return notFound(reply, request, 'postback URL');
      // Fields left as loaded keep what the template has now: events or an offer set meanwhile stay.
      form = keepConcurrentChanges(submitted, loaded, postbackValues(current), POSTBACK_FIELDS) as typeof submitted;
    }
    try {
      const input = postbackInput(form);
      if (postbackId) await updatePostback(ctx, brand.id, partner.id, postbackId, input);
      else await createPostback(ctx, brand.id, partner.id, input);
      return redirectWithFlash(reply, `/dashboard/partners/${partner.id}`, {
        kind: 'ok',
        text: postbackId ? 'Postback URL saved.' : 'Postback URL added.',
      });
    } catch (error) {
      const refused = { values: form, error: formError(error) };
      return views.showPartner(request, reply, partner, { editing: postbackId, refused });
    }
  };

  app.post('/partners/:id/postbacks', { schema: { params: IdParams, body: PostbackForm } }, async (request, reply) =>
    savePostback(request, reply, request.body, request.params.id),
  );

  app.post(
    '/partners/:id/postbacks/:postbackId',
    { schema: { params: PostbackParams, body: PostbackForm } },
    async (request, reply) => savePostback(request, reply, request.body, request.params.id, request.params.postbackId),
  );

  app.post(
    '/partners/:id/postbacks/:postbackId/delete',
    { schema: { params: PostbackParams, body: FormBody({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const { id, postbackId } = request.params;
      return runAction(request, reply, `/dashboard/partners/${id}`, async () => {
        await deletePostback(ctx, brand.id, id, postbackId);
        return 'Postback URL deleted.';
      });
    },
  );

  /** Sends the template once with test values, through the same SSRF guard and time-out as real sends. */
  app.post(
    '/partners/:id/postbacks/:postbackId/test',
    { schema: { params: PostbackParams, body: FormBody({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const { id, postbackId } = request.params;
      const back = `/dashboard/partners/${id}`;
      return runAction(request, reply, back, async () => {
        const sent = await sendTestPostback(ctx, brand.id, id, postbackId);
        if (!sent) throw ApiError.notFound('Postback');
        const { url, outcome } = sent;
        const answer = (outcome.responseBody ?? '').slice(0, TEST_ANSWER_CHARS);
        if (outcome.statusCode === null) throw ApiError.conflict(`Test send to ${url} failed: ${outcome.error}`);
        const ok = outcome.statusCode >= 200 && outcome.statusCode < 300;
        const summary = `Test send to ${url}: ${outcome.statusCode} in ${outcome.latencyMs} ms. ${answer}`.trim();
        if (!ok) throw ApiError.conflict(summary);
        return summary;
      });
    },
  );
}
