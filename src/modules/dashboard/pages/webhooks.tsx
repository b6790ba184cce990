/** Webhook subscriptions: list with health, create (secret shown once), edit, disable, delete. */
import { escapeHtml } from '@kitajs/html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { ALREADY_CREATED, claimForm } from '../../../web/sentOnce.js';
import { type FormValues, formError } from '../../../web/views/form.js';
import { EVENT_NAMES, type EventName } from '../../events/schemas.js';
import { findSubscription, listSubscriptions, type SubscriptionRow } from '../../webhooks/repository.js';
import type { SubscriptionHealth } from '../../webhooks/schemas.js';
import { CreateSubscriptionBody, UpdateSubscriptionBody } from '../../webhooks/schemas.js';
import { createSubscription, deleteSubscription, rotateSecret, updateSubscription } from '../../webhooks/service.js';
import { sendTestWebhook } from '../../webhooks/testSend.js';
import { keepConcurrentChanges, LOADED_FIELD } from '../editedFields.js';
import { notFound } from '../errors.js';
import { Cursor, Field, FormBody, IdParams, Query, text, validateAgainst } from '../forms.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, BackLink, Badge, CsrfField, EmptyState, Pager, Time } from '../views/components.js';
import { Table } from '../views/table.js';
import {
  generateSecret,
  SecretNotice,
  SUBSCRIPTION_FIELDS,
  SubscriptionForm,
  SubscriptionFormView,
  subscriptionInput,
  subscriptionValues,
} from './webhookForm.js';
import {
  HealthCell,
  OperationsPanel,
  type RecoverRefusal,
  recoverRoute,
  subscriptionHealth,
  today,
} from './webhookOps.js';

const PAGE_SIZE = 25;
const StatusForm = FormBody({ status: Field });
const TestSendFormBody = FormBody({ event: Field });

/**
 * Sends the catalogue's example of an event to the subscription now, signed; the outcome
 * opens as the test delivery in the log. The subscription's own events come first.
 */
function TestSendForm({ csrf, row }: { csrf: string; row: SubscriptionRow }) {
  const chosen = JSON.parse(row.events) as string[];
  const names = [
    ...chosen.filter((e) => EVENT_NAMES.includes(e as EventName)),
    ...EVENT_NAMES.filter((e) => !chosen.includes(e)),
  ];
  return (
    <section class="panel" aria-label="Test send">
      <form method="post" action={`/dashboard/webhooks/${escapeHtml(row.id)}/test`} class="inline">
        <CsrfField token={csrf} />
        <label for="test-event">Send a test event</label>{' '}
        <select id="test-event" name="event">
          {names.map((name) => (
            <option value={escapeHtml(name)} safe>
              {name}
            </option>
          ))}
        </select>{' '}
        <button type="submit" class="secondary">
          Send test
        </button>
      </form>
      <p class="muted small">
        The catalogue's example of the event, signed like a real delivery, sent once and kept in the delivery log as a
        test.
      </p>
    </section>
  );
}

function SubscriptionTable(props: {
  rows: SubscriptionRow[];
  health: Map<string, SubscriptionHealth>;
  csrf: string;
  timeZone: string;
  empty: JSX.Element;
}) {
  const { rows, csrf, timeZone } = props;
  return (
    <Table
      caption="Webhook subscriptions"
      columns={['Endpoint', 'Events', 'Status', 'Health', 'Signature', 'Created', 'Actions']}
      rows={rows.map((s) => {
        const next = s.status === 'active' ? 'disabled' : 'active';
        return [
          {
            rowHeader: true,
            html: (
              <>
                <a href={`/dashboard/webhooks/${s.id}`} class="mono" safe>
                  {s.url}
                </a>
                <br />
                <span class="muted small mono" safe>
                  {s.id}
                </span>
              </>
            ),
          },
          {
            html: (
              <>
                {(JSON.parse(s.events) as string[]).map((e) => (
                  <>
                    <span class="badge" safe>
                      {e}
                    </span>{' '}
                  </>
                ))}
              </>
            ),
          },
          { html: <Badge status={s.status} /> },
          { html: <HealthCell health={props.health.get(s.id)} status={s.status} /> },
          { text: s.secret ? 'Signed' : 'Unsigned' },
          { html: <Time ms={s.created_at} timeZone={timeZone} /> },
          {
            html: (
              <div class="actions">
                <a href={`/dashboard/deliveries?subscription=${s.id}`}>Deliveries</a>
                <ActionButton
                  csrf={csrf}
                  action={`/dashboard/webhooks/${s.id}/status`}
                  label={next === 'disabled' ? 'Disable' : 'Enable'}
                  small
                  tone="secondary"
                  fields={{ status: next }}
                  row={s.url}
                />
                <ActionButton
                  csrf={csrf}
                  action={`/dashboard/webhooks/${s.id}/delete`}
                  label="Delete"
                  small
                  tone="danger"
                  confirm={`Delete the subscription to ${s.url}? Its delivery log stays readable.`}
                  row={s.url}
                />
              </div>
            ),
          },
        ];
      })}
      empty={props.empty}
    />
  );
}

export function webhookPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/webhooks', { schema: { querystring: Query({ cursor: Cursor }) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const cursor = request.query.cursor || undefined;
    const page = toPage(
      await listSubscriptions(ctx.db.read, brand.id, { cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const health = await subscriptionHealth(ctx, page.data);
    return render(request, reply, {
      title: 'Webhooks',
      section: 'webhooks',
      body: (session) => (
        <>
          <div class="head">
            <h1>Webhooks</h1>
            <div class="actions">
              <a class="btn secondary" href="/dashboard/deliveries">
                Delivery log
              </a>
              <a class="btn" href="/dashboard/webhooks/new">
                New subscription
              </a>
            </div>
          </div>
          <SubscriptionTable
            rows={page.data}
            health={health}
            csrf={session.csrfToken}
            timeZone={brand.timezone}
            empty={
              <EmptyState title="No subscriptions yet">
                <a href="/dashboard/webhooks/new">Subscribe an endpoint</a> to hear about conversions, partners and
                fraud.
              </EmptyState>
            }
          />
          <Pager path="/dashboard/webhooks" query={{ cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });

  const showNew = (request: FastifyRequest, reply: FastifyReply, values: FormValues, error?: ApiError) =>
    render(request, reply, {
      title: 'New subscription',
      section: 'webhooks',
      status: error ? error.status : 200,
      body: (session) => (
        <>
          <BackLink href="/dashboard/webhooks" label="Webhooks" />
          <h1>New subscription</h1>
          <SubscriptionFormView
            csrf={session.csrfToken}
            action="/dashboard/webhooks"
            values={values}
            error={error}
            mode="create"
          />
        </>
      ),
    });

  app.get('/webhooks/new', { schema: { querystring: Query({}) } }, async (request, reply) =>
    showNew(request, reply, subscriptionValues(null)),
  );

  app.post('/webhooks', { schema: { body: SubscriptionForm } }, async (request, reply) => {
    const { brand, userId } = sessionOf(request);
    if (!(await claimForm(ctx, `dashboard:${userId}`, request.body.formId))) {
      return redirectWithFlash(reply, '/dashboard/webhooks', { kind: 'error', text: ALREADY_CREATED('subscription') });
    }
    try {
      const input = { ...subscriptionInput(request.body), secret: generateSecret() };
      validateAgainst(CreateSubscriptionBody, input);
      const row = await createSubscription(ctx, brand.id, input as typeof CreateSubscriptionBody.static);
      return showSaved(request, reply, row, input.secret, 'Subscription created.');
    } catch (error) {
      return showNew(request, reply, request.body, formError(error));
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
    render(request, reply, {
      title: 'Subscription saved',
      section: 'webhooks',
      flash: { kind: 'ok', text },
      body: () => (
        <>
          <BackLink href="/dashboard/webhooks" label="Webhooks" />
          <h1>Subscription saved</h1>
          <SecretNotice secret={secret} url={row.url} />
          <p>
            <a class="btn" href="/dashboard/webhooks">
              Done
            </a>{' '}
            <a href={`/dashboard/webhooks/${row.id}`}>Edit the subscription</a>
          </p>
        </>
      ),
    });

  const showEdit = async (
    request: FastifyRequest,
    reply: FastifyReply,
    row: SubscriptionRow,
    values?: FormValues,
    error?: ApiError,
    recover?: RecoverRefusal,
  ) => {
    const health = (await subscriptionHealth(ctx, [row])).get(row.id) as SubscriptionHealth;
    return render(request, reply, {
      title: 'Edit subscription',
      section: 'webhooks',
      status: error ? error.status : recover ? 422 : 200,
      body: (session) => (
        <>
          <BackLink href="/dashboard/webhooks" label="Webhooks" />
          <div class="head">
            <h1>
              Subscription <Badge status={row.status} />
            </h1>
            <div class="actions">
              <a class="btn secondary" href={`/dashboard/deliveries?subscription=${row.id}`}>
                Deliveries
              </a>
              <ActionButton
                csrf={session.csrfToken}
                action={`/dashboard/webhooks/${row.id}/delete`}
                label="Delete"
                tone="danger"
                confirm="Delete this subscription? Its delivery log stays readable."
              />
            </div>
          </div>
          <p class="muted small">
            <span class="mono" safe>
              {row.id}
            </span>{' '}
            · created <Time ms={row.created_at} timeZone={session.brand.timezone} /> ·{' '}
            {row.secret ? 'deliveries are signed' : 'deliveries are not signed'}
          </p>
          <TestSendForm csrf={session.csrfToken} row={row} />
          <section class="panel">
            <SubscriptionFormView
              csrf={session.csrfToken}
              action={`/dashboard/webhooks/${row.id}`}
              values={values ?? subscriptionValues(row)}
              loaded={subscriptionValues(row)}
              error={error}
              mode="edit"
            />
          </section>
          <OperationsPanel
            row={row}
            health={health}
            csrf={session.csrfToken}
            timeZone={session.brand.timezone}
            today={today(ctx, session.brand.timezone)}
            recover={recover}
          />
        </>
      ),
    });
  };

  recoverRoute(app, ctx, (request, reply, row, refusal) =>
    showEdit(request, reply, row, undefined, undefined, refusal),
  );

  app.get('/webhooks/:id', { schema: { params: IdParams, querystring: Query({}) } }, async (request, reply) => {
    const row = await findSubscription(ctx.db.read, sessionOf(request).brand.id, request.params.id);
    if (!row) return notFound(reply, request, 'subscription');
    return showEdit(request, reply, row);
  });

  app.post('/webhooks/:id', { schema: { params: IdParams, body: SubscriptionForm } }, async (request, reply) => {
    const { brand, userId } = sessionOf(request);
    const existing = await findSubscription(ctx.db.read, brand.id, request.params.id);
    if (!existing) return notFound(reply, request, 'subscription');
    // Fields left as loaded keep what the subscription has now: one disabled meanwhile stays disabled.
    const { [LOADED_FIELD]: loaded, ...submitted } = request.body;
    const form = keepConcurrentChanges(
      submitted,
      loaded,
      subscriptionValues(existing),
      SUBSCRIPTION_FIELDS,
    ) as typeof submitted;
    // Only a save that rotates shows a secret; saving the same fields twice changes nothing.
    if (text(form.rotateSecret) && !(await claimForm(ctx, `dashboard:${userId}`, form.formId))) {
      return redirectWithFlash(reply, `/dashboard/webhooks/${existing.id}`, {
        kind: 'error',
        text: ALREADY_CREATED('secret'),
      });
    }
    try {
      const input = { ...subscriptionInput(form), status: text(form.status) };
      validateAgainst(UpdateSubscriptionBody, input);
      await updateSubscription(ctx, brand.id, existing.id, input as typeof UpdateSubscriptionBody.static);
      if (text(form.rotateSecret)) {
        // A rotation, not a swap: the old secret keeps signing for 24 h, so receivers can switch.
        const rotated = await rotateSecret(ctx, brand.id, existing.id, { secret: generateSecret() });
        return showSaved(request, reply, rotated.row, rotated.secret, 'Subscription saved with a new signing secret.');
      }
      return redirectWithFlash(reply, '/dashboard/webhooks', { kind: 'ok', text: 'Subscription saved.' });
    } catch (error) {
      return showEdit(request, reply, existing, form, formError(error));
    }
  });

  app.post('/webhooks/:id/status', { schema: { params: IdParams, body: StatusForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const status = text(request.body.status) === 'active' ? 'active' : 'disabled';
    return runAction(request, reply, '/dashboard/webhooks', async () => {
      const row = await updateSubscription(ctx, brand.id, request.params.id, { status });
      return status === 'active'
        ? `Deliveries to ${row.url} resume; parked ones are sent in order.`
        : `Deliveries to ${row.url} are paused; new events are parked.`;
    });
  });

  app.post('/webhooks/:id/test', { schema: { params: IdParams, body: TestSendFormBody } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = `/dashboard/webhooks/${request.params.id}`;
    const event = text(request.body.event);
    if (!EVENT_NAMES.includes(event as EventName)) {
      return redirectWithFlash(reply, back, { kind: 'error', text: 'Choose an event from the list.' });
    }
    let sent: Awaited<ReturnType<typeof sendTestWebhook>>;
    try {
      sent = await sendTestWebhook(ctx, brand.id, request.params.id, event as EventName);
    } catch (error) {
      return runAction(request, reply, back, () => Promise.reject(error));
    }
    const attempt = sent.attempts[0];
    const answer = attempt?.statusCode === null ? `no answer (${attempt?.error ?? 'error'})` : `${attempt?.statusCode}`;
    return redirectWithFlash(reply, `/dashboard/deliveries/${sent.id}`, {
      kind: sent.status === 'succeeded' ? 'ok' : 'error',
      text: `Test ${event} sent: ${answer} in ${attempt?.latencyMs ?? 0} ms.`,
    });
  });

  app.post('/webhooks/:id/delete', { schema: { params: IdParams, body: FormBody({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    return runAction(request, reply, '/dashboard/webhooks', async () => {
      await deleteSubscription(ctx, brand.id, request.params.id);
      return 'Subscription deleted.';
    });
  });
}
