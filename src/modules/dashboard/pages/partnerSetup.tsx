/**
 * Setting partners up without the API: add a partner, and add, edit, test and delete the
 * postback URLs a partner hears about its conversions on.
 */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { ApiError, toApiError } from '../../../http/errors.js';
import { CreatePartnerBody } from '../../partners/schemas.js';
import { createPartner } from '../../partners/service.js';
import { CreatePostbackBody, POSTBACK_EVENTS } from '../../postbacks/schemas.js';
import { createPostback, deletePostback, type PostbackRow, updatePostback } from '../../postbacks/service.js';
import { sendTestPostback } from '../../postbacks/testSend.js';
import { Field, FormBody, IdParams, ListField, text, validateAgainst } from '../forms.js';
import { type DashboardApp, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, CsrfField } from '../views/components.js';
import { Table } from '../views/table.js';

const PartnerForm = FormBody({ name: Field, email: Field, website: Field });
const PostbackForm = FormBody({ url: Field, offerId: Field, events: ListField });
const PostbackParams = Type.Object({
  id: Type.String({ maxLength: 100 }),
  postbackId: Type.String({ maxLength: 100 }),
});
/** Characters of a test answer shown in the message. */
const TEST_ANSWER_CHARS = 200;

/** The "Add a partner" form of the Partners page (added partners start active). */
export function AddPartnerForm({ csrf }: { csrf: string }) {
  return (
    <details class="panel">
      <summary>Add a partner</summary>
      <form method="post" action="/dashboard/partners/new" class="inline-form">
        <CsrfField token={csrf} />
        <div>
          <label for="new-name">Name</label>
          <input id="new-name" name="name" required maxlength="200" />
        </div>
        <div>
          <label for="new-email">Email</label>
          <input id="new-email" name="email" type="email" required maxlength="254" />
        </div>
        <div>
          <label for="new-website">Website (optional)</label>
          <input id="new-website" name="website" type="url" maxlength="2048" />
        </div>
        <button type="submit">Add partner</button>
      </form>
    </details>
  );
}

/** Add or edit a postback URL (`row` given: edit it). */
export function PostbackFormView(props: {
  csrf: string;
  partnerId: string;
  offers: Array<{ id: string; name: string }>;
  row?: PostbackRow;
}) {
  const { row } = props;
  const key = row?.id ?? 'new';
  const events = row ? (JSON.parse(row.events) as string[]) : ['conversion.approved'];
  const action = `/dashboard/partners/${props.partnerId}/postbacks${row ? `/${row.id}` : ''}`;
  return (
    <form method="post" action={action} class="stack">
      <CsrfField token={props.csrf} />
      <div>
        <label for={`pb-url-${key}`}>Postback URL</label>
        <input
          id={`pb-url-${key}`}
          name="url"
          required
          maxlength="2048"
          class="mono"
          value={escapeHtml(row?.url ?? '')}
          aria-describedby={`pb-hint-${key}`}
        />
        <p class="hint" id={`pb-hint-${key}`}>
          Macros: {'{conversion_id} {click_id} {offer_id} {payout} {currency} {status} {txn_id} {sub1}…{sub5}'}
        </p>
      </div>
      <div>
        <label for={`pb-offer-${key}`}>Offer</label>
        <select id={`pb-offer-${key}`} name="offerId">
          <option value="">All offers</option>
          {props.offers.map((o) => (
            <option value={o.id} selected={o.id === row?.offer_id} safe>
              {o.name}
            </option>
          ))}
        </select>
      </div>
      <fieldset>
        <legend>Send on</legend>
        {POSTBACK_EVENTS.map((e) => (
          <label class="check">
            <input type="checkbox" name="events" value={e} checked={events.includes(e)} /> {e}
          </label>
        ))}
      </fieldset>
      <div>
        <button type="submit">{row ? 'Save postback' : 'Add postback'}</button>
      </div>
    </form>
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
        { text: props.offerLabel(t.offer_id) },
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

function postbackInput(form: { url?: string; offerId?: string; events?: string[] }) {
  const input = { url: text(form.url), offerId: text(form.offerId) || null, events: form.events ?? [] };
  validateAgainst(CreatePostbackBody, input);
  return input as CreatePostbackBody;
}

export function partnerSetupRoutes(app: DashboardApp, ctx: AppContext): void {
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
      const refused = toApiError(error);
      if (refused.status >= 500) throw error;
      return redirectWithFlash(reply, '/dashboard/partners', { kind: 'error', text: refused.message });
    }
  });

  app.post('/partners/:id/postbacks', { schema: { params: IdParams, body: PostbackForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = `/dashboard/partners/${request.params.id}`;
    return runAction(request, reply, back, async () => {
      await createPostback(ctx, brand.id, request.params.id, postbackInput(request.body));
      return 'Postback URL added.';
    });
  });

  app.post(
    '/partners/:id/postbacks/:postbackId',
    { schema: { params: PostbackParams, body: PostbackForm } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const { id, postbackId } = request.params;
      return runAction(request, reply, `/dashboard/partners/${id}`, async () => {
        await updatePostback(ctx, brand.id, id, postbackId, postbackInput(request.body));
        return 'Postback URL saved.';
      });
    },
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
