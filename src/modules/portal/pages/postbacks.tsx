/** Postback settings: the partner's URL templates with macros, a test send, and their delivery log. */
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { enforceRateLimit } from '../../../http/auth.js';
import { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { formError, type RefusedForm } from '../../../web/views/form.js';
import { PostbackFormView } from '../../../web/views/postbackForm.js';
import { Cursor, Field, FormBody, ListField, Query, text, validateAgainst } from '../../dashboard/forms.js';
import { offerNames } from '../../dashboard/repository.js';
import { redirectWithFlash } from '../../dashboard/session.js';
import { ActionButton, Badge, EmptyState, Pager, Time } from '../../dashboard/views/components.js';
import { num, Table } from '../../dashboard/views/table.js';
import { CreatePostbackBody } from '../../postbacks/schemas.js';
import { partnerOffers } from '../partnerData.js';
import {
  addPartnerPostback,
  listPartnerPostbacks,
  partnerPostbackLog,
  removePartnerPostback,
  sendTestPostback,
} from '../postbackSeam.js';
import { type PortalApp, renderPortal, runPortalAction, sendPortalError } from '../respond.js';
import { partnerSessionOf } from '../web.js';

const LOG_PAGE_SIZE = 25;
/** Test sends per partner per minute: enough to debug a receiver, too few to aim traffic at one. */
export const TEST_SENDS_PER_MINUTE = 10;
const MACROS = '{click_id} {conversion_id} {offer_id} {partner_id} {payout} {currency} {status} {sub1}…{sub5} {txn_id}';
const AddForm = FormBody({ url: Field, offerId: Field, events: ListField });
const PostbackParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const OFFER_CHOICES = 100;

export function postbackPages(app: PortalApp, ctx: AppContext): void {
  /** The page; `refused` shows the add form again (422) with what was entered. */
  const show = async (request: FastifyRequest, reply: FastifyReply, cursor?: string, refused?: RefusedForm) => {
    const session = partnerSessionOf(request);
    const scope = { brandId: session.brand.id, partnerId: session.partner.id };
    const [templates, log, offers] = await Promise.all([
      listPartnerPostbacks(ctx, scope),
      partnerPostbackLog(ctx, scope, { cursor, limit: LOG_PAGE_SIZE }),
      partnerOffers(ctx.db.read, scope, { limit: OFFER_CHOICES }),
    ]);
    // The names of the templates' own offers, however many offers the brand has.
    const names = await offerNames(
      ctx.db.read,
      scope.brandId,
      templates.flatMap((t) => (t.offer_id ? [t.offer_id] : [])),
    );
    const page = toPage(log, LOG_PAGE_SIZE, (r) => r);
    const tz = session.brand.timezone;
    return renderPortal(request, reply, {
      title: 'Postbacks',
      section: 'postbacks',
      status: refused ? refused.error.status : 200,
      body: (_, csrf) => (
        <>
          <h1>Postbacks</h1>
          <p>{`We call your URL when a conversion is recorded, approved or rejected. Macros: ${MACROS}.`}</p>
          <Table
            caption="Your postback URLs"
            columns={['URL', 'Offer', 'Events', 'Actions']}
            rows={templates.map((t) => [
              { class: 'mono', text: t.url },
              { class: 'name', text: t.offer_id ? (names.get(t.offer_id) ?? t.offer_id) : 'All offers' },
              { text: (JSON.parse(t.events) as string[]).join(', ') },
              {
                class: 'actions',
                html: (
                  <>
                    <ActionButton
                      csrf={csrf}
                      action={`/portal/postbacks/${t.id}/test`}
                      label="Send test"
                      small
                      row={t.url}
                    />
                    <ActionButton
                      csrf={csrf}
                      action={`/portal/postbacks/${t.id}/delete`}
                      label="Remove"
                      tone="danger"
                      small
                      row={t.url}
                      confirm="Remove this postback URL?"
                    />
                  </>
                ),
              },
            ])}
            empty={<EmptyState title="No postback URL yet." />}
          />
          <h2>Add a postback URL</h2>
          <PostbackFormView
            csrf={csrf}
            action="/portal/postbacks"
            offers={offers}
            values={{ events: ['conversion.created'] }}
            refused={refused}
            submitLabel="Add"
          />
          <h2>Delivery log</h2>
          <Table
            caption="Your postback sends"
            columns={['Sent', 'Event', 'Status', num('HTTP'), num('Latency'), 'Response']}
            rows={page.data.map((d) => [
              { html: <Time ms={d.createdAt} timeZone={tz} /> },
              { text: d.event },
              { html: <Badge status={d.status} /> },
              { class: 'num', text: d.lastStatusCode },
              { class: 'num', text: d.lastLatencyMs === null ? null : `${d.lastLatencyMs} ms` },
              { class: 'mono', text: (d.lastError ?? d.lastResponseBody ?? '').slice(0, 200) },
            ])}
            empty={<EmptyState title="No postback sent yet." />}
          />
          <Pager path="/portal/postbacks" query={{ cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  };

  app.get('/postbacks', { schema: { querystring: Query({ cursor: Cursor }) } }, (request, reply) =>
    show(request, reply, request.query.cursor),
  );

  app.post('/postbacks', { schema: { body: AddForm } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const scope = { brandId: session.brand.id, partnerId: session.partner.id };
    const input = {
      url: text(request.body.url),
      events: [request.body.events ?? []].flat(),
      ...(text(request.body.offerId) ? { offerId: text(request.body.offerId) } : {}),
    };
    try {
      validateAgainst(CreatePostbackBody, input);
      await addPartnerPostback(ctx, scope, input as CreatePostbackBody);
    } catch (error) {
      // As on the dashboard: back to the form as sent, each problem beside its field.
      return show(request, reply, undefined, { values: request.body, error: formError(error) });
    }
    return redirectWithFlash(reply, '/portal/postbacks', { kind: 'ok', text: 'Postback URL added.' });
  });

  app.post(
    '/postbacks/:id/delete',
    { schema: { params: PostbackParams, body: FormBody({}) } },
    async (request, reply) => {
      const session = partnerSessionOf(request);
      const scope = { brandId: session.brand.id, partnerId: session.partner.id };
      return runPortalAction(request, reply, '/portal/postbacks', async () => {
        await removePartnerPostback(ctx, scope, request.params.id);
        return 'Postback URL removed.';
      });
    },
  );

  app.post(
    '/postbacks/:id/test',
    { schema: { params: PostbackParams, body: FormBody({}) } },
    async (request, reply) => {
      const session = partnerSessionOf(request);
      const scope = { brandId: session.brand.id, partnerId: session.partner.id };
      if (!(await listPartnerPostbacks(ctx, scope)).some((p) => p.id === request.params.id)) {
        return sendPortalError(reply, request, 404, 'There is no such postback URL of yours.');
      }
      return runPortalAction(request, reply, '/portal/postbacks', async () => {
        await enforceRateLimit(ctx, request, reply, `portal-test-postback:${scope.partnerId}`, TEST_SENDS_PER_MINUTE);
        const sent = await sendTestPostback(ctx, scope, request.params.id);
        if (!sent) throw ApiError.notFound('Postback');
        const { outcome } = sent;
        const answer = outcome.error
          ? `failed: ${outcome.error}`
          : `HTTP ${outcome.statusCode} in ${outcome.latencyMs} ms. Response: ${(outcome.responseBody ?? '').slice(0, 300)}`;
        if (outcome.statusCode === null || outcome.statusCode < 200 || outcome.statusCode >= 300) {
          throw new ApiError('conflict', `Test sent to ${sent.url}: ${answer}`);
        }
        return `Test sent to ${sent.url}: ${answer}`;
      });
    },
  );
}
