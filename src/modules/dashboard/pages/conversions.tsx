/** Conversions: a filterable list with single and bulk decisions, and one conversion's page. */
import { escapeHtml } from '@kitajs/html';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { FormView } from '../../../web/views/form.js';
import { type ConversionRow, findConversion, listConversions } from '../../conversions/repository.js';
import { notFound } from '../errors.js';
import { count, money, subIds } from '../format.js';
import { IdParams, Query } from '../forms.js';
import { linkNames, offerMenu, offerNames, partnerMenu, partnerNames } from '../repository.js';
import { type DashboardApp, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { type ConversionTotal, conversionTotals } from '../trafficQueries.js';
import {
  ActionButton,
  BackLink,
  Badge,
  CreatedLink,
  CsrfField,
  EmptyState,
  LinkProps,
  link,
  Pager,
  Prop,
  Time,
} from '../views/components.js';
import { num, Table } from '../views/table.js';
import { conversionDecisionRoutes } from './conversionDecisions.js';
import { ConversionListQuery, conversionExportRoute, conversionFilterOf } from './conversionExport.js';

const PAGE_SIZE = 50;
const STATUSES = ['pending', 'approved', 'rejected'] as const;
export const DAY_LABELS = { from: 'From', to: 'To' };

function StatusCell({ conversion: c, timeZone }: { conversion: ConversionRow; timeZone: string }) {
  return (
    <>
      <Badge status={c.status} />
      {c.cap_exceeded ? (
        <>
          {' '}
          <Badge status="failed" label="over cap" />
        </>
      ) : (
        ''
      )}
      {c.status === 'pending' && c.hold_until !== null ? (
        <>
          <br />
          <span class="small muted">
            auto-approves <Time ms={c.hold_until} timeZone={timeZone} />
          </span>
        </>
      ) : (
        ''
      )}
    </>
  );
}

/** "3 conversions · revenue $85.00 · payout $21.00", or "2 pending conversions" under a status filter. */
function totalText(t: ConversionTotal, all: ConversionTotal[], status: string | undefined): string {
  const noun = `${status ? `${status} ` : ''}conversion${t.count === 1 ? '' : 's'}${all.length > 1 ? ` in ${t.currency}` : ''}`;
  if (t.revenueCents === null || t.payoutCents === null) return `${count(t.count)} ${noun}`;
  const rejected = t.rejected > 0 ? ` (${count(t.rejected)} rejected, not in the amounts)` : '';
  return `${count(t.count)} ${noun}${rejected} · revenue ${money(t.revenueCents, t.currency)} · payout ${money(t.payoutCents, t.currency)}`;
}

export function Menu(props: {
  name: string;
  label: string;
  items: Array<{ id: string; name: string }>;
  current: string;
}) {
  return (
    <div>
      <label for={props.name} safe>
        {props.label}
      </label>
      <select id={props.name} name={props.name}>
        <option value="">All</option>
        {props.items.map((i) => (
          <option value={i.id} selected={i.id === props.current} safe>
            {i.name}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A pending row's Reject: its own reason and a confirmation, posted by the row's own form. */
function RowReject({ id }: { id: string }) {
  return (
    <details class="row-reject">
      <summary class="btn small danger" aria-label={`Reject ${id}…`}>
        Reject…
      </summary>
      <label for={`reason-${id}`} class="visually-hidden" safe>
        Reason for rejecting {id}
      </label>
      <input id={`reason-${id}`} name="reason" form={`reject-${id}`} maxlength="500" placeholder="Reason (optional)" />
      <button
        type="submit"
        form={`reject-${id}`}
        class="small danger"
        data-confirm={`Reject conversion ${id}?`}
        aria-label={`Reject ${id}`}
      >
        Reject
      </button>
    </details>
  );
}

/** The forms the rows' Reject buttons post (outside the bulk form: forms do not nest). */
function RowRejectForms(props: { rows: ConversionRow[]; csrf: string; back: string }) {
  return (
    <>
      {props.rows
        .filter((c) => c.status === 'pending')
        .map((c) => (
          <form id={`reject-${c.id}`} method="post" action={`/dashboard/conversions/${c.id}/reject`} hidden>
            <CsrfField token={props.csrf} />
            <input type="hidden" name="back" value={escapeHtml(props.back)} />
          </form>
        ))}
    </>
  );
}

function ConversionRows(props: {
  rows: ConversionRow[];
  offers: Map<string, string>;
  partners: Map<string, string>;
  timeZone: string;
  empty: JSX.Element;
}) {
  return (
    <Table
      caption="Conversions"
      columns={[
        { label: 'Select', head: <span class="visually-hidden">Select</span> },
        'Recorded',
        'Offer',
        'Partner',
        'Status',
        num('Revenue'),
        num('Payout'),
        'Txn id',
        'Decide',
      ]}
      rows={props.rows.map((c) => [
        {
          html: (
            <>
              {c.status === 'pending' ? (
                <input type="checkbox" name="ids" value={c.id} data-row aria-label={`Select conversion ${c.id}`} />
              ) : (
                ''
              )}
            </>
          ),
        },
        {
          html: (
            <CreatedLink
              href={`/dashboard/conversions/${c.id}`}
              ms={c.created_at}
              timeZone={props.timeZone}
              id={c.id}
            />
          ),
        },
        { class: 'name', text: props.offers.get(c.offer_id) ?? c.offer_id },
        { class: 'name', text: props.partners.get(c.partner_id) ?? c.partner_id },
        { html: <StatusCell conversion={c} timeZone={props.timeZone} /> },
        { class: 'num', text: money(c.revenue_cents, c.currency) },
        { class: 'num', text: money(c.payout_cents, c.currency) },
        { class: 'mono small', text: c.external_txn_id },
        {
          html: (
            <>
              {c.status === 'pending' ? (
                <div class="actions">
                  <button type="submit" name="approve" value={c.id} class="small" aria-label={`Approve ${c.id}`}>
                    Approve
                  </button>
                  <RowReject id={c.id} />
                </div>
              ) : (
                ''
              )}
            </>
          ),
        },
      ])}
      empty={props.empty}
    />
  );
}

export function conversionPages(app: DashboardApp, ctx: AppContext): void {
  conversionDecisionRoutes(app, ctx);

  conversionExportRoute(app, ctx);

  app.get('/conversions', { schema: { querystring: ConversionListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const tz = brand.timezone;
    const { cursor: cursorParam, ...given } = request.query;
    const { filters, filter, refused } = conversionFilterOf(given, tz);
    const days = new FormView({ from: filters.from, to: filters.to }, DAY_LABELS, refused);
    const cursor = cursorParam || undefined;
    const q = ctx.db.read;
    // A refused range lists nothing: the page shows the filters and what to change.
    const [rows, totals, offers, partners] = await Promise.all([
      refused ? [] : listConversions(q, brand.id, { ...filter, cursor, limit: PAGE_SIZE }),
      refused
        ? []
        : conversionTotals(q, brand.id, filter, { from: filters.from || undefined, to: filters.to || undefined }),
      offerMenu(q, brand.id),
      partnerMenu(q, brand.id),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const [offerNamesMap, partnerNamesMap] = await Promise.all([
      offerNames(
        q,
        brand.id,
        page.data.map((c) => c.offer_id),
      ),
      partnerNames(
        q,
        brand.id,
        page.data.map((c) => c.partner_id),
      ),
    ]);
    const anyPending = page.data.some((c) => c.status === 'pending');
    const filtered = Object.values(filters).some(Boolean);
    const empty = (
      <EmptyState title={filtered ? 'No conversions match these filters' : 'No conversions yet'}>
        {filtered ? (
          <>
            <a href="/dashboard/conversions">Clear the filters</a>.
          </>
        ) : (
          'They appear here as soon as advertisers report them.'
        )}
      </EmptyState>
    );
    return render(request, reply, {
      title: 'Conversions',
      section: 'conversions',
      status: refused ? 422 : 200,
      body: (session) => (
        <>
          <div class="head">
            <h1>Conversions</h1>
            {refused ? (
              ''
            ) : (
              <a class="btn secondary" href={link('/dashboard/conversions/export.csv', filters)} download="">
                Export CSV
              </a>
            )}
          </div>
          {refused ? (
            ''
          ) : (
            <p class="totals">
              {totals.length === 0
                ? 'No matching conversions.'
                : escapeHtml(totals.map((t) => totalText(t, totals, filters.status)).join('; '))}
            </p>
          )}
          {days.summary()}
          <details class="filter-panel" open={filtered}>
            <summary>Filters</summary>
            <form method="get" action="/dashboard/conversions" class="filters" aria-label="Filters">
              <div>
                <label for="status">Status</label>
                <select id="status" name="status">
                  <option value="">All</option>
                  {STATUSES.map((s) => (
                    <option value={s} selected={s === filters.status}>
                      {s}
                    </option>
                  ))}
                </select>
              </div>
              <Menu name="offerId" label="Offer" items={offers} current={filters.offerId} />
              <Menu name="partnerId" label="Partner" items={partners} current={filters.partnerId} />
              {days.input('from', { type: 'date' })}
              {days.input('to', { type: 'date' })}
              <div>
                <label for="txn">Txn id</label>
                <input id="txn" name="txn" value={escapeHtml(filters.txn)} />
              </div>
              <div>
                <button type="submit">Filter</button> <a href="/dashboard/conversions">Reset</a>
              </div>
            </form>
          </details>
          {refused ? (
            ''
          ) : (
            <>
              <form method="post" action="/dashboard/conversions/bulk">
                <CsrfField token={session.csrfToken} />
                <input type="hidden" name="back" value={escapeHtml(request.url)} />
                {/*
                  Enter submits a form through a submit button chosen by the browser, never one the
                  user aimed at: these two come first so that Enter never approves or rejects. Enter
                  in a text field meets the disabled one (the form's default button) and does nothing;
                  chromium's Enter in a checkbox skips disabled buttons and clicks the next one, which
                  decides nothing (the script cancels it, keeping the ticks; without the script the
                  list comes back saying what to press).
                */}
                <button type="submit" disabled hidden></button>
                <button type="submit" name="action" value="none" hidden data-enter-only></button>
                {anyPending ? (
                  <div class="bulkbar">
                    <div>
                      {/* Here rather than in the table head, which a phone's card layout hides. */}
                      <label class="check">
                        <input type="checkbox" data-select-all />
                        Select all pending on this page
                      </label>
                      <span data-selection-count class="muted">
                        Select pending conversions to decide several at once.
                      </span>
                    </div>
                    <div class="inline-form">
                      <div>
                        <label for="reason">Rejection reason (optional)</label>
                        <input id="reason" name="reason" maxlength="500" />
                      </div>
                      <button type="submit" name="action" value="approve" data-needs-selection>
                        Approve selected
                      </button>
                      <button type="submit" name="action" value="reject" class="danger" data-needs-selection>
                        Reject selected
                      </button>
                    </div>
                  </div>
                ) : (
                  ''
                )}
                <ConversionRows
                  rows={page.data}
                  offers={offerNamesMap}
                  partners={partnerNamesMap}
                  timeZone={tz}
                  empty={empty}
                />
              </form>
              <RowRejectForms rows={page.data} csrf={session.csrfToken} back={request.url} />
              <Pager path="/dashboard/conversions" query={{ ...filters, cursor }} nextCursor={page.nextCursor} />
            </>
          )}
        </>
      ),
    });
  });

  app.get('/conversions/:id', { schema: { params: IdParams, querystring: Query({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const c = await findConversion(ctx.db.read, brand.id, request.params.id);
    if (!c) return notFound(reply, request, 'conversion');
    const names = await linkNames(ctx.db.read, brand.id, c);
    const tz = brand.timezone;
    const approvedBy = c.approved_by ? ` (${c.approved_by === 'manual' ? 'by a person' : 'after the hold time'})` : '';
    return render(request, reply, {
      title: `Conversion ${c.id}`,
      section: 'conversions',
      body: (session) => (
        <>
          <BackLink href="/dashboard/conversions" label="Conversions" />
          <div class="head">
            <h1>
              Conversion <StatusCell conversion={c} timeZone={tz} />
            </h1>
          </div>
          <section class="panel" aria-label="Details">
            <dl class="props">
              <Prop label="Id" mono text={c.id} />
              <LinkProps row={c} names={names} />
              <Prop label="Click" mono>
                {c.click_id ? (
                  <a href={`/dashboard/clicks/${c.click_id}`} safe>
                    {c.click_id}
                  </a>
                ) : (
                  '—'
                )}
              </Prop>
              <Prop label="Revenue" text={money(c.revenue_cents, c.currency)} />
              <Prop label="Payout" text={money(c.payout_cents, c.currency)} />
              <Prop label="Transaction id" mono text={c.external_txn_id} />
              <Prop label="Sub ids" mono text={subIds(c)} />
              <Prop label="Recorded">
                <Time ms={c.created_at} timeZone={tz} />
              </Prop>
              <Prop label="Hold until">
                <Time ms={c.hold_until} timeZone={tz} />
              </Prop>
              <Prop label="Approved">
                <Time ms={c.approved_at} timeZone={tz} />
                {escapeHtml(approvedBy)}
              </Prop>
              <Prop label="Rejected">
                <Time ms={c.rejected_at} timeZone={tz} />
                {c.rejection_reason ? escapeHtml(` — ${c.rejection_reason}`) : ''}
              </Prop>
            </dl>
          </section>
          {c.status === 'pending' ? (
            <section class="panel" aria-labelledby="decide-h">
              <h2 id="decide-h">Decide</h2>
              <div class="actions">
                <ActionButton
                  csrf={session.csrfToken}
                  action={`/dashboard/conversions/${c.id}/approve`}
                  label="Approve"
                />
                <form
                  method="post"
                  action={`/dashboard/conversions/${c.id}/reject`}
                  class="actions"
                  data-confirm="Reject this conversion?"
                >
                  <CsrfField token={session.csrfToken} />
                  <label for="reason" class="visually-hidden">
                    Rejection reason
                  </label>
                  <input id="reason" name="reason" maxlength="500" placeholder="Reason (optional)" />
                  <button type="submit" class="danger">
                    Reject
                  </button>
                </form>
              </div>
            </section>
          ) : (
            ''
          )}
        </>
      ),
    });
  });
}
