/**
 * Payouts: the brand's payout runs. A run is previewed (what it will pay, per partner and
 * currency) before it is confirmed; a payout can be marked paid, cancelled, or exported as CSV.
 */
import { escapeHtml } from '@kitajs/html';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { addDays, isRealDay, localDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { InvalidError } from '../../../errors.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { type FormValues, FormView, formError } from '../../../web/views/form.js';
import { listPartners, type PartnerRow } from '../../partners/repository.js';
import { payoutCsv } from '../../payouts/csv.js';
import { listPayouts } from '../../payouts/repository.js';
import { payoutDetail } from '../../payouts/routes.js';
import { cancelPayout, createRun, markPayoutPaid, previewRun } from '../../payouts/service.js';
import { notFound } from '../errors.js';
import { count, dateTime, money } from '../format.js';
import { Choice, Cursor, Field, FormBody, IdParams, Problems, Query, text } from '../forms.js';
import { partnerNames } from '../repository.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, BackLink, Badge, CsrfField, EmptyState, Pager, Prop, Tabs, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';

const PAGE_SIZE = 25;
const STATUSES = ['created', 'paid', 'cancelled'] as const;
const PARTNER_CHOICES = 200;
const Short = Type.Optional(Type.String({ maxLength: 100 }));
const ListQuery = Query({ status: Type.Optional(Choice(STATUSES)), partnerId: Short, cursor: Cursor });
const RunQuery = Query({ day: Short, partnerId: Short, minimum: Short });
const RunForm = FormBody({ upTo: Field, partnerId: Field, minimumCents: Field });
const PaidForm = FormBody({ reference: Field });
const STATUS_TONE = { created: 'pending', paid: 'approved', cancelled: 'disabled' } as const;
const RUN_LABELS = {
  day: 'Up to (day)',
  partnerId: 'Partner',
  minimum: 'Minimum per currency (minor units, such as cents)',
};
/** The service's names of a run's fields (the preview's query, the confirmation's body), as the form names them. */
const RUN_ALIASES = {
  upTo: 'day',
  'query.upTo': 'day',
  'query.partnerId': 'partnerId',
  minimumCents: 'minimum',
  'query.minimumCents': 'minimum',
};

function PayoutBadge({ status }: { status: keyof typeof STATUS_TONE }) {
  return <Badge status={STATUS_TONE[status]} label={status} />;
}

/**
 * The instant a run form's day stands for: the end of that brand-local day, or now for
 * today (a run may not reach into the future).
 */
function upToOfDay(day: string, timeZone: string, now: number): number {
  if (!isRealDay(day)) throw InvalidError.at('day', 'choose a day');
  if (day > localDay(now, timeZone)) throw InvalidError.at('day', 'must not be in the future');
  if (day === localDay(now, timeZone)) return now;
  return startOfLocalDay(addDays(parseDay(day), 1), timeZone) - 1;
}

/** The run form: a refused run comes back here with what was entered and the problems beside the fields. */
function RunFormView({ form, partners, today }: { form: FormView; partners: PartnerRow[]; today: string }) {
  return (
    <section class="panel" aria-labelledby="run-h">
      <h2 id="run-h">New payout run</h2>
      <p class="hint">
        Pays each partner, per currency, the approved conversions approved up to the end of the chosen day (or until
        now, for today) that are in no payout yet. You see what it will pay before confirming.
      </p>
      {form.summary()}
      <form method="get" action="/dashboard/payouts/new" class="filters">
        {form.input('day', { type: 'date', required: true, attrs: { max: today } })}
        {form.select('partnerId', [['', 'All partners'], ...partners.map((p): [string, string] => [p.id, p.name])])}
        {form.input('minimum', { attrs: { inputmode: 'numeric', placeholder: '0' } })}
        <div>
          <button type="submit">Preview</button>
        </div>
      </form>
    </section>
  );
}

export function payoutPages(app: DashboardApp, ctx: AppContext): void {
  /**
   * The payouts list (first page of all payouts after a refused run) with the run form: blank
   * (today), or a refused run's values with its problems (answered with the refusal's status).
   */
  const showPayouts = async (
    request: FastifyRequest,
    reply: FastifyReply,
    list: Static<typeof ListQuery>,
    run?: { values: FormValues; error: ApiError },
  ) => {
    const { brand } = sessionOf(request);
    const status = list.status || undefined;
    const partnerId = list.partnerId || undefined;
    const cursor = list.cursor || undefined;
    const [rows, partners] = await Promise.all([
      listPayouts(ctx.db.read, brand.id, { status, partnerId, cursor, limit: PAGE_SIZE }),
      listPartners(ctx.db.read, brand.id, { status: 'active', limit: PARTNER_CHOICES }),
    ]);
    // Every payout's partner by name, banned ones included (the picker offers active ones).
    const names = await partnerNames(
      ctx.db.read,
      brand.id,
      rows.map((r) => r.partner_id),
    );
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const today = localDay(ctx.clock.now(), brand.timezone);
    const form = new FormView(run?.values ?? { day: today }, RUN_LABELS, run?.error, RUN_ALIASES);
    return render(request, reply, {
      title: 'Payouts',
      section: 'payouts',
      status: run?.error.status,
      body: () => (
        <>
          <h1>Payouts</h1>
          <RunFormView form={form} partners={partners} today={today} />
          <Tabs
            label="Payout status"
            items={[
              { href: '/dashboard/payouts', text: 'All', current: !status },
              ...STATUSES.map((s) => ({ href: `/dashboard/payouts?status=${s}`, text: s, current: status === s })),
            ]}
          />
          <Table
            caption="Payouts"
            columns={['Payout', 'Partner', 'Status', num('Amount'), num('Conversions'), 'Up to', 'Created']}
            rows={page.data.map((p) => [
              {
                html: (
                  <a href={`/dashboard/payouts/${p.id}`} class="mono small" safe>
                    {p.id}
                  </a>
                ),
              },
              {
                class: 'name',
                html: (
                  <a href={`/dashboard/partners/${p.partner_id}`} safe>
                    {names.get(p.partner_id) ?? p.partner_id}
                  </a>
                ),
              },
              { html: <PayoutBadge status={p.status} /> },
              { class: 'num', text: money(p.amount_cents, p.currency) },
              { class: 'num', text: count(p.conversion_count) },
              { html: <Time ms={p.up_to} timeZone={brand.timezone} /> },
              { html: <Time ms={p.created_at} timeZone={brand.timezone} /> },
            ])}
            empty={<EmptyState title="No payouts yet">Create a run above once conversions are approved.</EmptyState>}
          />
          <Pager path="/dashboard/payouts" query={{ status, partnerId, cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  };

  app.get('/payouts', { schema: { querystring: ListQuery } }, (request, reply) =>
    showPayouts(request, reply, request.query),
  );

  app.get('/payouts/new', { schema: { querystring: RunQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const partnerId = text(request.query.partnerId) || undefined;
    let upTo: string;
    let minimum: number;
    let preview: Awaited<ReturnType<typeof previewRun>>;
    try {
      const problems = new Problems();
      minimum = parseMoneyOrZero(text(request.query.minimum), problems);
      problems.throwIfAny();
      upTo = new Date(upToOfDay(text(request.query.day), brand.timezone, ctx.clock.now())).toISOString();
      preview = await previewRun(ctx, brand.id, { upTo, partnerId, minimumCents: minimum });
    } catch (error) {
      return showPayouts(request, reply, {}, { values: request.query, error: formError(error) });
    }
    const total = new Map<string, number>();
    for (const line of preview.data) total.set(line.currency, (total.get(line.currency) ?? 0) + line.amountCents);
    return render(request, reply, {
      title: 'Payout run preview',
      section: 'payouts',
      body: (session) => (
        <>
          <BackLink href="/dashboard/payouts" label="Payouts" />
          <h1>Payout run preview</h1>
          <p
            safe
          >{`Conversions approved up to ${dateTime(Date.parse(upTo), brand.timezone)}${minimum > 0 ? `, partners owed at least ${minimum} minor units per currency` : ''}.`}</p>
          {preview.alreadyCreated ? (
            <p class="flash error" role="alert">
              A run with this end and partner already exists: confirming shows its payouts again and creates nothing.
              The table lists what it pays; conversions of its cancelled payouts are paid by a run of a later day.
            </p>
          ) : (
            ''
          )}
          <Table
            caption="What this run will pay"
            showCaption
            columns={['Partner', 'Currency', num('Amount'), num('Conversions')]}
            rows={preview.data.map((l) => [
              { text: l.partnerName },
              { text: l.currency },
              { class: 'num', text: money(l.amountCents, l.currency) },
              { class: 'num', text: count(l.conversionCount) },
            ])}
            empty={
              <EmptyState title="Nothing to pay">
                No approved conversion up to this day is waiting for a payout.
              </EmptyState>
            }
          />
          {total.size > 0 ? (
            <p safe>{`Total: ${[...total].map(([currency, cents]) => money(cents, currency)).join(' · ')}`}</p>
          ) : (
            ''
          )}
          {preview.belowMinimum.length > 0 ? (
            <Table
              caption="Below the minimum (left for a later run)"
              showCaption
              columns={['Partner', 'Currency', num('Amount')]}
              rows={preview.belowMinimum.map((l) => [
                { text: l.partnerName },
                { text: l.currency },
                { class: 'num', text: money(l.amountCents, l.currency) },
              ])}
            />
          ) : (
            ''
          )}
          <form method="post" action="/dashboard/payouts" class="inline">
            <CsrfField token={session.csrfToken} />
            <input type="hidden" name="upTo" value={upTo} />
            <input type="hidden" name="partnerId" value={escapeHtml(partnerId ?? '')} />
            <input type="hidden" name="minimumCents" value={String(minimum)} />
            <button type="submit" disabled={preview.data.length === 0 && !preview.alreadyCreated} safe>
              {`Create ${preview.data.length} payout${preview.data.length === 1 ? '' : 's'}`}
            </button>
          </form>
        </>
      ),
    });
  });

  app.post('/payouts', { schema: { body: RunForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const upTo = text(request.body.upTo);
    let outcome: Awaited<ReturnType<typeof createRun>>;
    try {
      const minimumCents = Number(text(request.body.minimumCents) || '0');
      if (!Number.isSafeInteger(minimumCents) || minimumCents < 0) throw InvalidError.at('minimumCents', 'is invalid');
      outcome = await createRun(ctx, brand.id, {
        upTo,
        partnerId: text(request.body.partnerId) || undefined,
        minimumCents,
      });
    } catch (error) {
      // Back to the form with the run's values (its day, in the brand's time zone), not a dead end.
      const at = Date.parse(upTo);
      const values = {
        day: Number.isNaN(at) ? '' : localDay(at, brand.timezone),
        partnerId: text(request.body.partnerId),
        minimum: text(request.body.minimumCents),
      };
      return showPayouts(request, reply, {}, { values, error: formError(error) });
    }
    const n = outcome.payouts.length;
    const message = outcome.created
      ? `Created ${n} payout${n === 1 ? '' : 's'}.`
      : `This run already existed: ${n} payout${n === 1 ? '' : 's'}, nothing new created.`;
    return redirectWithFlash(reply, '/dashboard/payouts', { kind: 'ok', text: message });
  });

  app.get('/payouts/:id', { schema: { params: IdParams, querystring: Query({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const payout = await payoutDetail(ctx.db.read, brand.id, request.params.id);
    if (!payout) return notFound(reply, request, 'payout');
    const tz = brand.timezone;
    const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));
    return render(request, reply, {
      title: `Payout ${payout.id}`,
      section: 'payouts',
      body: (session) => (
        <>
          <BackLink href="/dashboard/payouts" label="Payouts" />
          <div class="head">
            <h1>
              {escapeHtml(`${money(payout.amountCents, payout.currency)} to ${payout.partnerName}`)}{' '}
              <PayoutBadge status={payout.status} />
            </h1>
            <div class="actions">
              <a class="btn secondary" href={`/dashboard/payouts/${payout.id}/export.csv`} download="">
                Export CSV
              </a>
              {payout.status === 'created' ? (
                <ActionButton
                  csrf={session.csrfToken}
                  action={`/dashboard/payouts/${payout.id}/cancel`}
                  label="Cancel payout"
                  tone="danger"
                  confirm="Cancel this payout? Its conversions become payable again."
                />
              ) : (
                ''
              )}
            </div>
          </div>
          <section class="panel" aria-label="Details">
            <dl class="props">
              <Prop label="Id" mono text={payout.id} />
              <Prop label="Partner">
                <a href={`/dashboard/partners/${payout.partnerId}`} safe>
                  {payout.partnerName}
                </a>
              </Prop>
              <Prop label="Payout method" text={payout.payoutMethod} />
              <Prop label="Account" mono text={payout.payoutAccount} />
              <Prop label="Up to">
                <Time ms={ms(payout.upTo)} timeZone={tz} />
              </Prop>
              <Prop label="Created">
                <Time ms={ms(payout.createdAt)} timeZone={tz} />
              </Prop>
              <Prop label="Paid">
                <Time ms={ms(payout.paidAt)} timeZone={tz} />
              </Prop>
              <Prop label="Reference" text={payout.reference} />
            </dl>
            <p class="hint">
              Payout method and account: what the partner had entered when this payout was created, kept whatever the
              partner enters afterwards. To pay to details changed since, cancel the payout and run again.
            </p>
          </section>
          {payout.status === 'created' ? (
            <form method="post" action={`/dashboard/payouts/${payout.id}/mark-paid`} class="row-form">
              <CsrfField token={session.csrfToken} />
              <label for="reference">Payment reference</label>
              <input id="reference" name="reference" maxlength="200" placeholder="e.g. bank transfer id" />
              <button type="submit">Mark paid</button>
            </form>
          ) : (
            ''
          )}
          <Table
            caption="Conversions in this payout"
            showCaption
            columns={['Conversion', 'Approved', num('Amount')]}
            rows={payout.conversions.map((c) => [
              { class: 'mono small', text: c.conversionId },
              { html: <Time ms={ms(c.approvedAt)} timeZone={tz} /> },
              { class: 'num', text: money(c.amountCents, payout.currency) },
            ])}
            empty={<EmptyState title="No conversions">A cancelled payout gave its conversions back.</EmptyState>}
          />
        </>
      ),
    });
  });

  app.get(
    '/payouts/:id/export.csv',
    { schema: { params: IdParams, querystring: Query({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      const payout = await payoutDetail(ctx.db.read, brand.id, request.params.id);
      if (!payout) return notFound(reply, request, 'payout');
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${payout.id}.csv"`)
        .send(payoutCsv(payout));
    },
  );

  app.post('/payouts/:id/mark-paid', { schema: { params: IdParams, body: PaidForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = `/dashboard/payouts/${request.params.id}`;
    return runAction(request, reply, back, async () => {
      const reference = text(request.body.reference).slice(0, 200) || null;
      const row = await markPayoutPaid(ctx, brand.id, request.params.id, reference);
      return `Payout of ${money(row.amount_cents, row.currency)} marked paid.`;
    });
  });

  app.post('/payouts/:id/cancel', { schema: { params: IdParams, body: FormBody({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    return runAction(request, reply, `/dashboard/payouts/${request.params.id}`, async () => {
      await cancelPayout(ctx, brand.id, request.params.id);
      return 'Payout cancelled; its conversions are payable again.';
    });
  });
}

function parseMoneyOrZero(value: string, problems: Problems): number {
  if (value === '') return 0;
  if (!/^\d{1,13}$/.test(value)) {
    problems.add('minimum', 'must be a whole number of minor units (cents)');
    return 0;
  }
  return Number(value);
}
