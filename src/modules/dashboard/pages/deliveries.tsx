/** The delivery log (webhooks and postback sends): filters, each delivery's attempts, redeliver. */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { findDelivery, listAttempts, listDeliveries } from '../../webhooks/repository.js';
import { redeliver } from '../../webhooks/service.js';
import { notFound } from '../errors.js';
import { count } from '../format.js';
import { Choice, Cursor, FormBody, IdParams, Query } from '../forms.js';
import { deliveryTargets, eventPayload } from '../repository.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { sessionOf } from '../session.js';
import { ActionButton, BackLink, Badge, EmptyState, link, Pager, Prop, Time } from '../views/components.js';
import { Cell, num, Table } from '../views/table.js';

const PAGE_SIZE = 50;
const STATUSES = ['attempting', 'retry_scheduled', 'succeeded', 'failed'] as const;
const KINDS = ['webhook', 'postback'] as const;
const ListQuery = Query({
  status: Type.Optional(Choice(STATUSES)),
  kind: Type.Optional(Choice(KINDS)),
  subscription: Type.Optional(Type.String({ maxLength: 64 })),
  cursor: Cursor,
});

type DeliveryRow = Awaited<ReturnType<typeof listDeliveries>>[number];

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function Option({
  value,
  current,
  label = value.replace('_', ' '),
}: {
  value: string;
  current?: string;
  label?: string;
}) {
  return (
    <option value={value} selected={value === current} safe>
      {label}
    </option>
  );
}

function DeliveryTable(props: {
  rows: DeliveryRow[];
  targets: Map<string, string>;
  timeZone: string;
  empty: JSX.Element;
}) {
  return (
    <Table
      caption="Deliveries"
      columns={['Queued', 'Kind', 'Event', 'Target', 'Status', num('Attempts'), 'Next attempt']}
      rows={props.rows.map((d) => (
        <tr>
          <td>
            <a href={`/dashboard/deliveries/${d.id}`}>
              <Time ms={d.created_at} timeZone={props.timeZone} />
            </a>
            <br />
            <span class="muted small mono" safe>
              {d.id}
            </span>
          </td>
          <Cell text={d.kind} />
          <Cell text={d.event} />
          <Cell class="mono small" text={d.target_url ?? props.targets.get(d.subscription_id) ?? d.subscription_id} />
          <td>
            <Badge status={d.status} />
          </td>
          <Cell class="num" text={count(d.attempt_count)} />
          <td>{d.next_attempt_at === null ? '—' : <Time ms={d.next_attempt_at} timeZone={props.timeZone} />}</td>
        </tr>
      ))}
      empty={props.empty}
    />
  );
}

export function deliveryPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/deliveries', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const filters = {
      status: request.query.status || undefined,
      kind: request.query.kind || undefined,
      subscription: request.query.subscription || undefined,
    };
    const cursor = request.query.cursor || undefined;
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
    const filtered = Boolean(filters.status || filters.kind || filters.subscription);
    return render(request, reply, {
      title: 'Delivery log',
      section: 'deliveries',
      body: () => (
        <>
          <h1>Delivery log</h1>
          <form method="get" action="/dashboard/deliveries" class="filters" aria-label="Filters">
            <div>
              <label for="status">Status</label>
              <select id="status" name="status">
                <option value="">All</option>
                {STATUSES.map((s) => (
                  <Option value={s} current={filters.status} />
                ))}
              </select>
            </div>
            <div>
              <label for="kind">Kind</label>
              <select id="kind" name="kind">
                <option value="">Webhooks and postbacks</option>
                {KINDS.map((k) => (
                  <Option value={k} current={filters.kind} label={`${k}s`} />
                ))}
              </select>
            </div>
            {filters.subscription ? (
              <>
                <input type="hidden" name="subscription" value={escapeHtml(filters.subscription)} />
                <p class="small">
                  Subscription <span class="mono">{escapeHtml(filters.subscription)}</span> ·{' '}
                  <a href={link('/dashboard/deliveries', { status: filters.status, kind: filters.kind })}>
                    all subscriptions
                  </a>
                </p>
              </>
            ) : (
              ''
            )}
            <div>
              <button type="submit">Filter</button>
            </div>
          </form>
          <DeliveryTable
            rows={page.data}
            targets={targets}
            timeZone={brand.timezone}
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
      ),
    });
  });

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
    const finished = d.status === 'succeeded' || d.status === 'failed';
    const kind = d.kind === 'webhook' ? 'Webhook (POST)' : `Partner postback (${d.method ?? 'GET'})`;
    return render(request, reply, {
      title: `Delivery ${d.id}`,
      section: 'deliveries',
      body: (session) => (
        <>
          <BackLink href="/dashboard/deliveries" label="Delivery log" />
          <div class="head">
            <h1>
              Delivery <Badge status={d.status} />
            </h1>
            {finished ? (
              <ActionButton
                csrf={session.csrfToken}
                action={`/dashboard/deliveries/${d.id}/redeliver`}
                label="Redeliver"
              />
            ) : (
              <p class="muted">Redelivery is possible once this delivery has succeeded or failed.</p>
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
                <pre safe>{prettyJson(payload)}</pre>
              </details>
            ) : (
              ''
            )}
          </section>
          <h2>Attempts</h2>
          <Table
            caption="Attempts, newest first"
            columns={[num('#'), 'Time', 'Status code', num('Latency'), 'Response body / error']}
            rows={[...attempts].reverse().map((a) => (
              <tr>
                <th scope="row" class="num">
                  {a.number}
                </th>
                <td>
                  <Time ms={a.attempted_at} timeZone={tz} />
                </td>
                <td>
                  {a.status_code === null ? (
                    <span class="muted">no answer</span>
                  ) : (
                    <Badge
                      status={a.status_code >= 200 && a.status_code < 300 ? 'succeeded' : 'failed'}
                      label={String(a.status_code)}
                    />
                  )}
                </td>
                <Cell class="num" text={`${count(a.latency_ms)} ms`} />
                <td>
                  {escapeHtml(a.error ?? '')}
                  {a.response_body ? (
                    <pre safe>{a.response_body}</pre>
                  ) : a.error ? (
                    ''
                  ) : (
                    <span class="muted">empty body</span>
                  )}
                </td>
              </tr>
            ))}
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
        return 'Queued for redelivery: the same delivery id and body are sent again.';
      });
    },
  );
}
