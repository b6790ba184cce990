/** The delivery log (webhooks and postback sends): filters, each delivery's attempts, redeliver. */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import { addDays, isRealDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { FormView } from '../../../web/views/form.js';
import { EVENT_NAMES } from '../../events/schemas.js';
import { type AttemptRow, findDelivery, listAttempts, listSubscriptions } from '../../webhooks/repository.js';
import { redeliver } from '../../webhooks/service.js';
import {
  conversionEventIds,
  deliveriesOfEvents,
  deliveryLog,
  deliveryTargets,
  eventPayload,
  lastAttempts,
  partnerPostbackIds,
  retryNow,
} from '../deliveryQueries.js';
import { notFound } from '../errors.js';
import { count } from '../format.js';
import { Choice, Cursor, dayRangeProblems, Field, FormBody, IdParams, Query, text } from '../forms.js';
import { MENU_LIMIT, partnerMenu } from '../repository.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { safeDashboardPath, sessionOf } from '../session.js';
import { ActionButton, BackLink, Badge, CreatedLink, EmptyState, Pager, Prop, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';
import { DAY_LABELS, Menu } from './conversions.js';

const PAGE_SIZE = 50;
const STATUSES = ['attempting', 'retry_scheduled', 'succeeded', 'failed', 'parked'] as const;
const KINDS = ['webhook', 'postback'] as const;
const ListQuery = Query({
  status: Type.Optional(Choice(STATUSES)),
  kind: Type.Optional(Choice(KINDS)),
  event: Type.Optional(Choice(EVENT_NAMES)),
  subscription: Type.Optional(Type.String({ maxLength: 64 })),
  partnerId: Type.Optional(Type.String({ maxLength: 64 })),
  from: Type.Optional(Type.String({ maxLength: 10 })),
  to: Type.Optional(Type.String({ maxLength: 10 })),
  q: Type.Optional(Type.String({ maxLength: 100 })),
  cursor: Cursor,
});

type DeliveryRow = Awaited<ReturnType<typeof deliveryLog>>[number];

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** `name: value` lines of a stored header object (JSON), for a <pre>. */
function headerLines(json: string | null): string {
  if (json === null) return '';
  return Object.entries(JSON.parse(json) as Record<string, string>)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

/**
 * What an attempt sent (method, URL, headers: the signature, never the secret) and the
 * response headers it got; attempts recorded before the log kept them show nothing.
 */
function AttemptHeaders({ attempt }: { attempt: AttemptRow }): JSX.Element {
  if (attempt.request_url === null) return '';
  const request = `${attempt.request_method ?? ''} ${attempt.request_url}\n${headerLines(attempt.request_headers)}`;
  return (
    <details>
      <summary>Request and response headers</summary>
      <h3 class="small">Request</h3>
      <pre tabindex="0" safe>
        {request}
      </pre>
      <h3 class="small">Response headers</h3>
      {attempt.response_headers === null ? (
        <p class="muted">no answer</p>
      ) : (
        <pre tabindex="0" safe>
          {headerLines(attempt.response_headers)}
        </pre>
      )}
    </details>
  );
}

/** "queued" until the first attempt: "attempting" would claim a send that has not begun. */
function DeliveryStatus({ d }: { d: DeliveryRow }) {
  return d.status === 'attempting' && d.attempt_count === 0 ? (
    <Badge status="attempting" label="queued" />
  ) : (
    <Badge status={d.status} />
  );
}

function DeliveryTable(props: {
  rows: DeliveryRow[];
  targets: Map<string, string>;
  attempts: Map<string, AttemptRow>;
  timeZone: string;
  csrf: string;
  back: string;
  empty: JSX.Element;
}) {
  return (
    <Table
      caption="Deliveries"
      class="wide"
      columns={['Queued', 'Event', 'Target', 'Status', 'Last answer', num('Attempts'), 'Next attempt']}
      rows={props.rows.map((d) => {
        const last = props.attempts.get(d.id);
        return [
          {
            html: (
              <CreatedLink
                href={`/dashboard/deliveries/${d.id}`}
                ms={d.created_at}
                timeZone={props.timeZone}
                id={d.id}
              />
            ),
          },
          {
            html: (
              <>
                {escapeHtml(d.event)}
                <br />
                <span class="muted small" safe>
                  {d.kind}
                </span>
              </>
            ),
          },
          { class: 'mono small url', text: d.target_url ?? props.targets.get(d.subscription_id) ?? d.subscription_id },
          { html: <DeliveryStatus d={d} /> },
          {
            class: 'url',
            html: (
              <>
                {last ? (
                  <>
                    <span class="mono" safe>{`${last.status_code ?? 'no answer'} · ${count(last.latency_ms)} ms`}</span>
                    {last.error ? (
                      <>
                        <br />
                        <span class="small muted" safe>
                          {last.error}
                        </span>
                      </>
                    ) : (
                      ''
                    )}
                  </>
                ) : (
                  <span class="muted">not tried yet</span>
                )}
              </>
            ),
          },
          { class: 'num', text: count(d.attempt_count) },
          {
            html: (
              <>
                {d.next_attempt_at === null ? '—' : <Time ms={d.next_attempt_at} timeZone={props.timeZone} />}
                {d.status === 'retry_scheduled' ? (
                  <ActionButton
                    csrf={props.csrf}
                    action={`/dashboard/deliveries/${d.id}/retry`}
                    label="Retry now"
                    tone="secondary"
                    small
                    fields={{ back: props.back }}
                    row={d.id}
                  />
                ) : (
                  ''
                )}
              </>
            ),
          },
        ];
      })}
      empty={props.empty}
    />
  );
}

/** A search term as a filter: a delivery id, an event's deliveries or a conversion's. */
async function searchFilter(ctx: AppContext, brandId: string, term: string): Promise<{ ids: string[] }> {
  if (!term.startsWith('evt_') && !term.startsWith('conv_')) return { ids: [term] };
  const eventIds = term.startsWith('evt_') ? [term] : await conversionEventIds(ctx.db.read, brandId, term);
  return { ids: await deliveriesOfEvents(ctx.db.read, eventIds) };
}

function dayBound(day: string, timeZone: string, end: boolean): number | undefined {
  if (!day || !isRealDay(day)) return undefined;
  return startOfLocalDay(end ? addDays(parseDay(day), 1) : parseDay(day), timeZone);
}

export function deliveryPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/deliveries', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const q = ctx.db.read;
    const { cursor: cursorParam, ...given } = request.query;
    const filters = {
      status: given.status || undefined,
      kind: given.kind || undefined,
      event: given.event || undefined,
      subscription: text(given.subscription) || undefined,
      partnerId: text(given.partnerId) || undefined,
      from: text(given.from) || undefined,
      to: text(given.to) || undefined,
      q: text(given.q) || undefined,
    };
    const cursor = cursorParam || undefined;
    // A day the calendar lacks or a reversed range is refused beside its field (422), not ignored.
    const dayProblems = dayRangeProblems(filters.from ?? '', filters.to ?? '');
    const refused = dayProblems.length > 0 ? ApiError.validation(dayProblems) : undefined;
    const days = new FormView({ from: filters.from ?? '', to: filters.to ?? '' }, DAY_LABELS, refused);
    const partnerTargets = filters.partnerId ? await partnerPostbackIds(q, brand.id, filters.partnerId) : undefined;
    const search = filters.q ? await searchFilter(ctx, brand.id, filters.q) : {};
    const rows = refused
      ? []
      : await deliveryLog(q, brand.id, {
          status: filters.status,
          kind: filters.kind,
          event: filters.event,
          targets: filters.subscription ? [filters.subscription] : partnerTargets,
          fromMs: dayBound(filters.from ?? '', brand.timezone, false),
          toMs: dayBound(filters.to ?? '', brand.timezone, true),
          ...search,
          cursor,
          limit: PAGE_SIZE,
        });
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const [targets, attempts, subscriptions, partners] = await Promise.all([
      deliveryTargets(
        q,
        brand.id,
        page.data.map((d) => d.subscription_id),
      ),
      lastAttempts(q, page.data),
      listSubscriptions(q, brand.id, { limit: MENU_LIMIT }),
      partnerMenu(q, brand.id),
    ]);
    const filtered = Object.values(filters).some(Boolean);
    return render(request, reply, {
      title: 'Delivery log',
      section: 'deliveries',
      status: refused ? 422 : 200,
      body: (session) => (
        <>
          <h1>Delivery log</h1>
          <form method="get" action="/dashboard/deliveries" class="inline-form search">
            <div>
              <label for="q">Search by id</label>
              <input
                id="q"
                name="q"
                type="search"
                value={escapeHtml(filters.q ?? '')}
                placeholder="wh_…, evt_… or conv_…"
              />
            </div>
            <button type="submit" class="secondary">
              Search
            </button>
          </form>
          {days.summary()}
          <details class="filter-panel" open={filtered}>
            <summary>Filters</summary>
            <form method="get" action="/dashboard/deliveries" class="filters" aria-label="Filters">
              <Menu
                name="status"
                label="Status"
                items={STATUSES.map((s) => ({ id: s, name: s.replace('_', ' ') }))}
                current={filters.status ?? ''}
              />
              <Menu
                name="kind"
                label="Kind"
                items={KINDS.map((k) => ({ id: k, name: `${k}s` }))}
                current={filters.kind ?? ''}
              />
              <Menu
                name="event"
                label="Event type"
                items={EVENT_NAMES.map((e) => ({ id: e, name: e }))}
                current={filters.event ?? ''}
              />
              <Menu
                name="subscription"
                label="Subscription"
                items={subscriptions.map((s) => ({ id: s.id, name: s.url }))}
                current={filters.subscription ?? ''}
              />
              <Menu name="partnerId" label="Partner (postbacks)" items={partners} current={filters.partnerId ?? ''} />
              {days.input('from', { type: 'date' })}
              {days.input('to', { type: 'date' })}
              <div>
                <button type="submit">Filter</button> <a href="/dashboard/deliveries">Reset</a>
              </div>
            </form>
          </details>
          {/* A refused range lists nothing: the page shows the filters and what to change. */}
          {refused ? (
            ''
          ) : (
            <>
              <DeliveryTable
                rows={page.data}
                targets={targets}
                attempts={attempts}
                timeZone={brand.timezone}
                csrf={session.csrfToken}
                back={request.url}
                empty={
                  <EmptyState title={filtered ? 'No deliveries match these filters' : 'Nothing delivered yet'}>
                    {filtered ? (
                      <>
                        <a href="/dashboard/deliveries">Show every delivery</a>.
                      </>
                    ) : (
                      'Webhooks and partner postbacks appear here as events happen.'
                    )}
                  </EmptyState>
                }
              />
              <Pager path="/dashboard/deliveries" query={{ ...filters, cursor }} nextCursor={page.nextCursor} />
            </>
          )}
        </>
      ),
    });
  });

  app.post(
    '/deliveries/:id/retry',
    { schema: { params: IdParams, body: FormBody({ back: Field }) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const { id } = request.params;
      const back = safeDashboardPath(text(request.body.back), `/dashboard/deliveries/${id}`);
      return runAction(request, reply, back, async () => {
        if (await retryNow(ctx, brand.id, id)) return 'The next attempt starts now.';
        if (!(await findDelivery(ctx.db.read, brand.id, id))) throw ApiError.notFound('Delivery');
        throw ApiError.conflict('Only a delivery waiting for its next retry can be retried now.');
      });
    },
  );

  app.get('/deliveries/:id', { schema: { params: IdParams, querystring: Query({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const d = await findDelivery(ctx.db.read, brand.id, request.params.id);
    if (!d) return notFound(reply, request, 'delivery');
    const [attempts, payload, targets] = await Promise.all([
      listAttempts(ctx.db.read, d.id),
      eventPayload(ctx.db.read, brand.id, d.event_id),
      deliveryTargets(ctx.db.read, brand.id, [d.subscription_id]),
    ]);
    const tz = brand.timezone;
    const target = d.target_url ?? targets.get(d.subscription_id) ?? '';
    // A test send is never sent again (the API answers 409): a new test is the way to resend.
    const redeliverable =
      d.test !== 1 && (d.status === 'succeeded' || d.status === 'failed' || d.status === 'retry_scheduled');
    const kind =
      (d.kind === 'webhook' ? 'Webhook (POST)' : `Partner postback (${d.method ?? 'GET'})`) +
      (d.test === 1 ? ' · test send' : '');
    return render(request, reply, {
      title: `Delivery ${d.id}`,
      section: 'deliveries',
      body: (session) => (
        <>
          <BackLink href="/dashboard/deliveries" label="Delivery log" />
          <div class="head">
            <h1>
              Delivery <DeliveryStatus d={d} />
            </h1>
            {d.status === 'retry_scheduled' ? (
              <ActionButton csrf={session.csrfToken} action={`/dashboard/deliveries/${d.id}/retry`} label="Retry now" />
            ) : (
              ''
            )}
            {redeliverable ? (
              <ActionButton
                csrf={session.csrfToken}
                action={`/dashboard/deliveries/${d.id}/redeliver`}
                label="Redeliver"
              />
            ) : (
              <p class="muted">
                {d.test === 1
                  ? 'A test send is never sent again: send a new test event from the subscription.'
                  : d.status === 'parked'
                    ? 'Parked while its subscription is disabled: enabling it sends this delivery.'
                    : 'Redelivery is possible once the attempt under way is recorded.'}
              </p>
            )}
          </div>
          <section class="panel" aria-label="Details">
            <dl class="props">
              <Prop label="Delivery id" mono text={d.id} />
              <Prop label="Kind" text={kind} />
              <Prop label="Event">
                {escapeHtml(d.event)}{' '}
                <span class="mono small muted" safe>
                  {d.event_id}
                </span>
              </Prop>
              <Prop label="Target" mono text={target} />
              <Prop label="Queued">
                <Time ms={d.created_at} timeZone={tz} />
              </Prop>
              <Prop label="Next attempt">
                <Time ms={d.next_attempt_at} timeZone={tz} />
              </Prop>
            </dl>
            {payload && d.kind === 'webhook' ? (
              <details>
                <summary>Request body (formatted)</summary>
                <pre tabindex="0" safe>
                  {prettyJson(payload)}
                </pre>
              </details>
            ) : (
              ''
            )}
          </section>
          <h2>Attempts</h2>
          <Table
            caption="Attempts, newest first"
            columns={[num('#'), 'Time', 'Status code', num('Latency'), 'Response body / error']}
            rows={[...attempts].reverse().map((a) => [
              { rowHeader: true, class: 'num', text: a.number },
              { html: <Time ms={a.attempted_at} timeZone={tz} /> },
              {
                html: (
                  <>
                    {a.status_code === null ? (
                      <span class="muted">no answer</span>
                    ) : (
                      <Badge
                        status={a.status_code >= 200 && a.status_code < 300 ? 'succeeded' : 'failed'}
                        label={String(a.status_code)}
                      />
                    )}
                  </>
                ),
              },
              { class: 'num', text: `${count(a.latency_ms)} ms` },
              {
                html: (
                  <>
                    {escapeHtml(a.error ?? '')}
                    {a.response_body ? (
                      <pre tabindex="0" safe>
                        {a.response_body}
                      </pre>
                    ) : a.error ? (
                      ''
                    ) : (
                      <span class="muted">empty body</span>
                    )}
                    <AttemptHeaders attempt={a} />
                  </>
                ),
              },
            ])}
            empty={
              <EmptyState title="No attempts yet">The first attempt is made right after the event commits.</EmptyState>
            }
          />
        </>
      ),
    });
  });

  app.post(
    '/deliveries/:id/redeliver',
    { schema: { params: IdParams, body: FormBody({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const { id } = request.params;
      return runAction(request, reply, `/dashboard/deliveries/${id}`, async () => {
        await redeliver(ctx, brand.id, id);
        return 'One attempt is being made now with the same delivery id and body; the schedule is otherwise unchanged.';
      });
    },
  );
}
