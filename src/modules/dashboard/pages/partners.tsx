/** Partners: list by status, applicant review (approve, ban with a reason), partner page. */
import { escapeHtml } from '@kitajs/html';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { formError, type RefusedForm } from '../../../web/views/form.js';
import { PostbackFormView } from '../../../web/views/postbackForm.js';
import { listOffers } from '../../offers/repository.js';
import { findPartner, type PartnerRow } from '../../partners/repository.js';
import { BanBody } from '../../partners/schemas.js';
import { approvePartner, banPartner } from '../../partners/service.js';
import { partnerBalances } from '../../payouts/repository.js';
import { listPostbacks } from '../../postbacks/service.js';
import { recentPostbackSends } from '../deliveryQueries.js';
import { notFound } from '../errors.js';
import { count } from '../format.js';
import { Choice, Cursor, Field, FormBody, IdParams, Query, text, validateAgainst } from '../forms.js';
import { countByStatus, offerMenu, offerNames, searchPartners } from '../repository.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { safeDashboardPath, sessionOf } from '../session.js';
import { NO_NUMBERS, numbersBy } from '../trafficQueries.js';
import {
  ActionButton,
  BackLink,
  Badge,
  CopyField,
  CsrfField,
  EmptyState,
  Pager,
  Prop,
  Tabs,
  Time,
} from '../views/components.js';
import { NUMBER_COLUMNS, NUMBERS_DAYS, NumberCards, numberCells, numbersRange } from '../views/numbers.js';
import { num, Table } from '../views/table.js';
import { BalanceCell, PartnerPortalPanel } from './partnerPortal.js';
import { AddPartnerForm, PostbackTable, partnerSetupRoutes, postbackValues } from './partnerSetup.js';
import { showRefusedReason } from './reasonForm.js';

const PAGE_SIZE = 25;
const RECENT_SENDS = 20;
const STATUSES = ['applicant', 'active', 'banned'] as const;
const STATUS_LABELS = { applicant: 'Applicants', active: 'Active', banned: 'Banned' };
const ListQuery = Query({
  status: Type.Optional(Choice(STATUSES)),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  cursor: Cursor,
});
/** The partner page pages through its tracking links with `?offers=`; `?edit=` opens a postback. */
const PartnerQuery = Query({ offers: Cursor, edit: Cursor });
const ApproveForm = FormBody({ back: Field });
const BanForm = FormBody({ back: Field, reason: Field });

function BanFormView({ csrf, partner, back }: { csrf: string; partner: PartnerRow; back: string }) {
  const id = `reason-${partner.id}`;
  return (
    <form
      method="post"
      action={`/dashboard/partners/${partner.id}/ban`}
      class="row-form"
      data-confirm={escapeHtml(`Ban ${partner.name}? Their tracking links stop working.`)}
    >
      <CsrfField token={csrf} />
      <input type="hidden" name="back" value={escapeHtml(back)} />
      <label for={id} class="visually-hidden" safe>
        Reason for banning {partner.name}
      </label>
      <input id={id} name="reason" maxlength="500" placeholder="Reason (optional)" />
      <button type="submit" class="danger small" aria-label={escapeHtml(`Ban ${partner.name}`)}>
        Ban
      </button>
    </form>
  );
}

export function partnerPages(app: DashboardApp, ctx: AppContext): void {
  /** The list; `refused` shows the Add a partner form again (422) with what was entered. */
  const showList = async (
    request: FastifyRequest,
    reply: FastifyReply,
    query: Static<typeof ListQuery>,
    back: string,
    refused?: RefusedForm,
  ) => {
    const { brand } = sessionOf(request);
    const status = query.status || undefined;
    const search = text(query.q) || undefined;
    const cursor = query.cursor || undefined;
    const [rows, applicants] = await Promise.all([
      searchPartners(ctx.db.read, brand.id, { status, search, cursor, limit: PAGE_SIZE }),
      countByStatus(ctx.db.read, 'partners', brand.id, 'applicant'),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const { from, to } = numbersRange(ctx.clock.now(), brand.timezone);
    const [balances, numbers] = await Promise.all([
      partnerBalances(
        ctx.db.read,
        brand.id,
        page.data.map((p) => p.id),
      ),
      numbersBy(
        ctx.db.read,
        brand.id,
        'partner_id',
        page.data.map((p) => p.id),
        from,
        to,
      ),
    ]);
    const applyUrl = `${ctx.config.publicUrl}/apply/${brand.slug}`;
    return render(request, reply, {
      title: 'Partners',
      section: 'partners',
      status: refused ? refused.error.status : 200,
      body: (session) => (
        <>
          <div class="head">
            <h1>Partners</h1>
          </div>
          <AddPartnerForm csrf={session.csrfToken} refused={refused} />
          <CopyField id="apply-url" label="Public application form" value={applyUrl} />
          <form method="get" action="/dashboard/partners" class="inline-form search">
            {status ? <input type="hidden" name="status" value={status} /> : ''}
            <div>
              <label for="q">Search partners</label>
              <input
                id="q"
                name="q"
                type="search"
                value={escapeHtml(search ?? '')}
                placeholder="Name, email or prt_ id"
              />
            </div>
            <button type="submit" class="secondary">
              Search
            </button>
          </form>
          <Tabs
            label="Partner status"
            items={[
              { href: '/dashboard/partners', text: 'All', current: !status },
              ...STATUSES.map((s) => ({
                href: `/dashboard/partners?status=${s}`,
                text: s === 'applicant' ? `${STATUS_LABELS[s]} (${count(applicants)})` : STATUS_LABELS[s],
                current: status === s,
              })),
            ]}
          />
          <Table
            caption={`Partners, numbers of the last ${NUMBERS_DAYS} days`}
            class="wide"
            columns={['Partner', 'Status', ...NUMBER_COLUMNS, 'Applied', 'Owed', 'Actions']}
            rows={page.data.map((p) => [
              {
                rowHeader: true,
                html: (
                  <>
                    <a href={`/dashboard/partners/${p.id}`} safe>
                      {p.name}
                    </a>
                    <br />
                    <span class="muted small" safe>
                      {p.email}
                    </span>
                  </>
                ),
              },
              {
                html: (
                  <>
                    <Badge status={p.status} />
                    {p.ban_reason ? (
                      <>
                        <br />
                        <span class="small muted" safe>
                          {p.ban_reason}
                        </span>
                      </>
                    ) : (
                      ''
                    )}
                  </>
                ),
              },
              ...numberCells(numbers.get(p.id) ?? NO_NUMBERS, brand.currency),
              { html: <Time ms={p.created_at} timeZone={brand.timezone} /> },
              { html: <BalanceCell balances={balances.filter((b) => b.partnerId === p.id)} /> },
              {
                html: (
                  <>
                    {p.status === 'applicant' ? (
                      <div class="actions">
                        <ActionButton
                          csrf={session.csrfToken}
                          action={`/dashboard/partners/${p.id}/approve`}
                          label="Approve"
                          small
                          fields={{ back }}
                          row={p.name}
                        />
                        <BanFormView csrf={session.csrfToken} partner={p} back={back} />
                      </div>
                    ) : (
                      <a href={`/dashboard/partners/${p.id}`} aria-label={escapeHtml(`Details of ${p.name}`)}>
                        Details
                      </a>
                    )}
                  </>
                ),
              },
            ])}
            empty={
              <EmptyState title={status === 'applicant' ? 'No applications waiting' : 'No partners here yet'}>
                Partners apply through your public form:{' '}
                <a href={applyUrl} safe>
                  {applyUrl}
                </a>
              </EmptyState>
            }
          />
          <Pager path="/dashboard/partners" query={{ status, q: search, cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  };

  /** A partner's page; `refused` shows the postback form again (422) with what was entered. */
  const showPartner = async (
    request: FastifyRequest,
    reply: FastifyReply,
    partner: PartnerRow,
    options: { offers?: string; editing?: string; refused?: RefusedForm },
  ) => {
    const { brand } = sessionOf(request);
    const templates = await listPostbacks(ctx, brand.id, partner.id);
    const cursor = options.offers || undefined;
    const editing = templates.find((t) => t.id === options.editing);
    const refused = options.refused;
    const range = numbersRange(ctx.clock.now(), brand.timezone);
    const [sends, offers, names, menu, numbers] = await Promise.all([
      recentPostbackSends(
        ctx.db.read,
        brand.id,
        templates.map((t) => t.id),
        RECENT_SENDS,
      ),
      listOffers(ctx.db.read, brand.id, { status: 'active', cursor, limit: PAGE_SIZE }),
      offerNames(
        ctx.db.read,
        brand.id,
        templates.flatMap((t) => (t.offer_id ? [t.offer_id] : [])),
      ),
      offerMenu(ctx.db.read, brand.id),
      numbersBy(ctx.db.read, brand.id, 'partner_id', [partner.id], range.from, range.to),
    ]);
    const offerPage = toPage(offers, PAGE_SIZE, (r) => r);
    const balances = await partnerBalances(ctx.db.read, brand.id, [partner.id]);
    const tz = brand.timezone;
    const back = `/dashboard/partners/${partner.id}`;
    const offerLabel = (id: string | null) => (id ? (names.get(id) ?? id) : 'All offers');
    const sendRows = (
      <Table
        caption="Recent postback sends"
        columns={['Queued', 'Event', 'Status', num('Attempts'), 'URL']}
        rows={sends.map((d) => [
          {
            html: (
              <a href={`/dashboard/deliveries/${d.id}`}>
                <Time ms={d.created_at} timeZone={tz} />
              </a>
            ),
          },
          { text: d.event },
          { html: <Badge status={d.status} /> },
          { class: 'num', text: d.attempt_count },
          { class: 'mono small', text: d.target_url },
        ])}
        empty={
          <EmptyState title="No postbacks sent yet">
            Sends appear here as this partner’s conversions are recorded and decided.
          </EmptyState>
        }
      />
    );
    const links = (
      <Table
        caption="Tracking links"
        rows={offerPage.data.map((o) => [
          {
            rowHeader: true,
            html: (
              <a href={`/dashboard/offers/${o.id}`} safe>
                {o.name}
              </a>
            ),
          },
          {
            html: (
              <CopyField
                id={`link-${o.id}`}
                label={`Tracking link for ${o.name}`}
                value={`${ctx.config.publicUrl}/t/${o.id}/${partner.id}`}
                visibleLabel={false}
              />
            ),
          },
        ])}
        empty={<EmptyState title="No active offers" />}
      />
    );
    return render(request, reply, {
      title: partner.name,
      section: 'partners',
      status: refused ? refused.error.status : 200,
      body: (session) => (
        <>
          <BackLink href="/dashboard/partners" label="Partners" />
          <div class="head">
            <h1>
              {escapeHtml(partner.name)} <Badge status={partner.status} />
            </h1>
            <div class="actions">
              {partner.status === 'applicant' ? (
                <ActionButton
                  csrf={session.csrfToken}
                  action={`/dashboard/partners/${partner.id}/approve`}
                  label="Approve"
                  fields={{ back }}
                />
              ) : (
                ''
              )}
              {partner.status !== 'banned' ? (
                <BanFormView csrf={session.csrfToken} partner={partner} back={back} />
              ) : (
                ''
              )}
            </div>
          </div>
          <NumberCards
            n={numbers.get(partner.id) ?? NO_NUMBERS}
            currency={brand.currency}
            label={`Last ${NUMBERS_DAYS} days`}
          />
          <p class="small">
            <a href={`/dashboard/reports?partnerId=${partner.id}&time=day`}>Report</a> ·{' '}
            <a href={`/dashboard/conversions?partnerId=${partner.id}`}>Conversions</a> ·{' '}
            <a href={`/dashboard/clicks?partnerId=${partner.id}`}>Clicks</a>
          </p>
          <section class="panel" aria-label="Details">
            <dl class="props">
              <Prop label="Id" mono text={partner.id} />
              <Prop label="Email" text={partner.email} />
              <Prop label="Website" text={partner.website} />
              <Prop label="Applied">
                <Time ms={partner.created_at} timeZone={tz} />
              </Prop>
              <Prop label="Approved">
                <Time ms={partner.approved_at} timeZone={tz} />
              </Prop>
              <Prop label="Banned">
                <Time ms={partner.banned_at} timeZone={tz} />
                {partner.ban_reason ? escapeHtml(` — ${partner.ban_reason}`) : ''}
              </Prop>
            </dl>
          </section>
          <PartnerPortalPanel
            partnerId={partner.id}
            active={partner.status === 'active'}
            csrf={session.csrfToken}
            balances={balances}
          />
          <h2>Postback URLs</h2>
          <PostbackTable
            csrf={session.csrfToken}
            partnerId={partner.id}
            templates={templates}
            offerLabel={offerLabel}
            empty={
              <EmptyState title="No postback URLs">
                Add one below: the partner hears about its conversions on it.
              </EmptyState>
            }
          />
          <section class="panel" id="postback-form" aria-labelledby="postback-form-h">
            <h3 id="postback-form-h">{editing ? 'Edit postback URL' : 'Add a postback URL'}</h3>
            <PostbackFormView
              csrf={session.csrfToken}
              action={`${back}/postbacks${editing ? `/${editing.id}` : ''}`}
              offers={menu}
              values={editing ? postbackValues(editing) : { events: ['conversion.approved'] }}
              refused={refused}
              loaded={editing ? postbackValues(editing) : undefined}
              submitLabel={editing ? 'Save postback' : 'Add postback'}
            />
          </section>
          <h2>Recent postback sends</h2>
          {sendRows}
          {partner.status === 'active' ? (
            <>
              <h2>Tracking links</h2>
              {links}
              <Pager path={back} query={{ offers: cursor }} nextCursor={offerPage.nextCursor} cursorParam="offers" />
            </>
          ) : (
            ''
          )}
        </>
      ),
    });
  };

  partnerSetupRoutes(app, ctx, {
    showList: (request, reply, refused) => showList(request, reply, {}, '/dashboard/partners', refused),
    showPartner,
  });

  app.get('/partners', { schema: { querystring: ListQuery } }, async (request, reply) =>
    showList(request, reply, request.query, request.url),
  );

  app.get('/partners/:id', { schema: { params: IdParams, querystring: PartnerQuery } }, async (request, reply) => {
    const partner = await findPartner(ctx.db.read, sessionOf(request).brand.id, request.params.id);
    if (!partner) return notFound(reply, request, 'partner');
    return showPartner(request, reply, partner, { offers: request.query.offers, editing: request.query.edit });
  });

  app.post('/partners/:id/approve', { schema: { params: IdParams, body: ApproveForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = safeDashboardPath(text(request.body.back), '/dashboard/partners');
    return runAction(request, reply, back, async () => {
      const row = await approvePartner(ctx, brand.id, request.params.id);
      return `${row.name} is approved and can now send traffic. Invite them to the partner portal from their page.`;
    });
  });

  app.post('/partners/:id/ban', { schema: { params: IdParams, body: BanForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const back = safeDashboardPath(text(request.body.back), '/dashboard/partners');
    const input = { reason: text(request.body.reason) || null };
    try {
      validateAgainst(BanBody, input);
    } catch (error) {
      const partner = await findPartner(ctx.db.read, brand.id, request.params.id);
      if (!partner) return notFound(reply, request, 'partner');
      return showRefusedReason(request, reply, {
        title: `Ban ${partner.name}`,
        section: 'partners',
        action: `/dashboard/partners/${partner.id}/ban`,
        hidden: { back },
        reason: text(request.body.reason),
        label: `Reason for banning ${partner.name}`,
        submitLabel: 'Ban',
        back,
        error: formError(error),
      });
    }
    return runAction(request, reply, back, async () => {
      const row = await banPartner(ctx, brand.id, request.params.id, input.reason);
      return `${row.name} is banned.`;
    });
  });
}
