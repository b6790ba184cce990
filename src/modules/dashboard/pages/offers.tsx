/** Offers: list by status, create, edit, and each active partner's tracking link. */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { type FormValues, formError } from '../../../web/views/form.js';
import { capCounts } from '../../caps/service.js';
import { pixelUrl, rotatePostbackToken } from '../../conversions/pixel.js';
import { findOffer, listOffers, type OfferRow } from '../../offers/repository.js';
import { createOffer, updateOffer } from '../../offers/service.js';
import { listPartners } from '../../partners/repository.js';
import { editedFields, keepConcurrentChanges, LOADED_FIELD } from '../editedFields.js';
import { notFound } from '../errors.js';
import { count, duration, money } from '../format.js';
import { Choice, Cursor, FormBody, IdParams, Query } from '../forms.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { NO_NUMBERS, type Numbers, numbersBy } from '../trafficQueries.js';
import { ActionButton, BackLink, Badge, CopyField, EmptyState, Pager, Tabs, Time } from '../views/components.js';
import { NUMBER_COLUMNS, NUMBERS_DAYS, NumberCards, numberCells, numbersRange } from '../views/numbers.js';
import { Table } from '../views/table.js';
import { OFFER_FIELDS, OfferForm, OfferFormView, offerInput, offerPatch, offerValues } from './offerForm.js';

const PAGE_SIZE = 25;
const STATUSES = ['active', 'paused', 'archived'] as const;
const ListQuery = Query({ status: Type.Optional(Choice(STATUSES)), cursor: Cursor });
/** The offer page pages through its tracking links with `?partners=`. */
const OfferQuery = Query({ partners: Cursor });

function capsSummary(o: OfferRow): string {
  const caps = [
    ['day', o.cap_daily],
    ['week', o.cap_weekly],
    ['month', o.cap_monthly],
    ['total', o.cap_global],
  ].filter(([, n]) => n !== null);
  return caps.length === 0 ? '—' : caps.map(([label, n]) => `${n}/${label}`).join(', ');
}

function OfferTable(props: {
  offers: OfferRow[];
  numbers: Map<string, Numbers>;
  currency: string;
  empty: JSX.Element;
}) {
  return (
    <Table
      caption={`Offers, numbers of the last ${NUMBERS_DAYS} days`}
      columns={['Offer', 'Status', ...NUMBER_COLUMNS, 'Per conversion', 'Approval', 'Caps']}
      rows={props.offers.map((o) => [
        {
          rowHeader: true,
          html: (
            <>
              <a href={`/dashboard/offers/${o.id}`} safe>
                {o.name}
              </a>
              <br />
              <span class="muted small mono" safe>
                {o.id}
              </span>
            </>
          ),
        },
        { html: <Badge status={o.status} /> },
        // An offer's money is in its own currency: with no traffic yet, its zero is too (€0.00, not $0.00).
        ...numberCells(props.numbers.get(o.id) ?? NO_NUMBERS, o.currency),
        { class: 'num', text: `${money(o.revenue_cents, o.currency)} / ${money(o.payout_cents, o.currency)}` },
        {
          text: `starts ${o.conversion_status}${o.hold_seconds === null ? '' : `, auto after ${duration(o.hold_seconds)}`}`,
        },
        { text: capsSummary(o) },
      ])}
      empty={props.empty}
    />
  );
}

const CAP_PERIOD_NAMES = { daily: 'Today', weekly: 'This week', monthly: 'This month', global: 'In all' } as const;

export function offerPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/offers', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const status = request.query.status || undefined;
    const cursor = request.query.cursor || undefined;
    const page = toPage(
      await listOffers(ctx.db.read, brand.id, { status, cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const { from, to } = numbersRange(ctx.clock.now(), brand.timezone);
    const numbers = await numbersBy(
      ctx.db.read,
      brand.id,
      'offer_id',
      page.data.map((o) => o.id),
      from,
      to,
    );
    return render(request, reply, {
      title: 'Offers',
      section: 'offers',
      body: () => (
        <>
          <div class="head">
            <h1>Offers</h1>
            <a class="btn" href="/dashboard/offers/new">
              New offer
            </a>
          </div>
          <Tabs
            label="Offer status"
            items={[
              { href: '/dashboard/offers', text: 'All', current: !status },
              ...STATUSES.map((s) => ({
                href: `/dashboard/offers?status=${s}`,
                text: s[0]!.toUpperCase() + s.slice(1),
                current: status === s,
              })),
            ]}
          />
          <OfferTable
            offers={page.data}
            numbers={numbers}
            currency={brand.currency}
            empty={
              <EmptyState title={status ? `No ${status} offers` : 'No offers yet'}>
                <a href="/dashboard/offers/new">Create the first offer</a>.
              </EmptyState>
            }
          />
          <Pager path="/dashboard/offers" query={{ status, cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });

  const showNew = (request: FastifyRequest, reply: FastifyReply, values?: FormValues, error?: ApiError) =>
    render(request, reply, {
      title: 'New offer',
      section: 'offers',
      status: error ? error.status : 200,
      body: (session) => (
        <>
          <BackLink href="/dashboard/offers" label="Offers" />
          <h1>New offer</h1>
          <OfferFormView
            csrf={session.csrfToken}
            action="/dashboard/offers"
            values={values ?? offerValues(null, session.brand.currency)}
            error={error}
            submitLabel="Create offer"
          />
        </>
      ),
    });

  app.get('/offers/new', { schema: { querystring: Query({}) } }, async (request, reply) => showNew(request, reply));

  app.post('/offers', { schema: { body: OfferForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    try {
      const row = await createOffer(ctx, brand.id, offerInput(request.body, brand.currency));
      return redirectWithFlash(reply, `/dashboard/offers/${row.id}`, {
        kind: 'ok',
        text: `Offer “${row.name}” created.`,
      });
    } catch (error) {
      return showNew(request, reply, request.body, formError(error));
    }
  });

  const showEdit = async (
    request: FastifyRequest,
    reply: FastifyReply,
    offer: OfferRow,
    cursor: string | undefined,
    values?: FormValues,
    error?: ApiError,
  ) => {
    const { brand } = sessionOf(request);
    const partners = toPage(
      await listPartners(ctx.db.read, brand.id, { status: 'active', cursor, limit: PAGE_SIZE }),
      PAGE_SIZE,
      (r) => r,
    );
    const base = `${ctx.config.publicUrl}/t/${offer.id}/`;
    const { from, to } = numbersRange(ctx.clock.now(), brand.timezone);
    const numbers = (await numbersBy(ctx.db.read, brand.id, 'offer_id', [offer.id], from, to)).get(offer.id);
    const caps = await capCounts(ctx.db.read, offer, brand.timezone, ctx.clock.now());
    const capReached = caps.some((c) => c.count >= c.limit);
    const links = (
      <Table
        caption="Tracking links"
        columns={['Partner', 'Tracking link']}
        rows={partners.data.map((p) => [
          {
            rowHeader: true,
            html: (
              <a href={`/dashboard/partners/${p.id}`} safe>
                {p.name}
              </a>
            ),
          },
          {
            html: (
              <CopyField
                id={`link-${p.id}`}
                label={`Tracking link for ${p.name}`}
                value={base + p.id}
                visibleLabel={false}
              />
            ),
          },
        ])}
        empty={
          <EmptyState title="No active partners yet">
            Approve applicants on the <a href="/dashboard/partners?status=applicant">Partners</a> page.
          </EmptyState>
        }
      />
    );
    return render(request, reply, {
      title: offer.name,
      section: 'offers',
      status: error ? error.status : 200,
      body: (session) => (
        <>
          <BackLink href="/dashboard/offers" label="Offers" />
          <h1>
            {escapeHtml(offer.name)} <Badge status={offer.status} />
          </h1>
          <p class="muted small">
            <span class="mono" safe>
              {offer.id}
            </span>{' '}
            · created <Time ms={offer.created_at} timeZone={brand.timezone} /> · updated{' '}
            <Time ms={offer.updated_at} timeZone={brand.timezone} /> ·{' '}
            <a href={`/dashboard/reports?offerId=${offer.id}&time=day`}>Report</a> ·{' '}
            <a href={`/dashboard/conversions?offerId=${offer.id}`}>Conversions</a> ·{' '}
            <a href={`/dashboard/clicks?offerId=${offer.id}`}>Clicks</a>
          </p>
          <NumberCards n={numbers ?? NO_NUMBERS} currency={offer.currency} label={`Last ${NUMBERS_DAYS} days`} />
          {caps.length > 0 ? (
            <section class="panel" aria-labelledby="caps-h">
              <h2 id="caps-h">Caps now</h2>
              <ul>
                {caps.map((c) => (
                  <li safe>
                    {`${CAP_PERIOD_NAMES[c.cap]}: ${count(c.count)} of ${count(c.limit)}${c.count >= c.limit ? ' — reached' : ''}`}
                  </li>
                ))}
              </ul>
              {capReached ? (
                <p class="flash error" role="status">
                  A cap is reached: tracking links send visitors to the{' '}
                  {offer.fallback_url ? 'fallback URL' : 'destination URL (no fallback URL is set)'}, and new
                  conversions wait pending.
                </p>
              ) : (
                ''
              )}
            </section>
          ) : (
            ''
          )}
          <div class="cols">
            <section aria-labelledby="edit-h" class="panel">
              <h2 id="edit-h">Settings</h2>
              <OfferFormView
                csrf={session.csrfToken}
                action={`/dashboard/offers/${offer.id}`}
                values={values ?? offerValues(offer, brand.currency)}
                loaded={offerValues(offer, brand.currency)}
                error={error}
                submitLabel="Save changes"
              />
            </section>
            <section aria-labelledby="pixel-h" class="panel">
              <h2 id="pixel-h">Pixel postback</h2>
              <p class="hint">
                For advertisers who can only fire a URL: it records a conversion for the click, like the API. Rotating
                the token stops the old URL at once.
              </p>
              {offer.postback_token ? (
                <>
                  <CopyField id="pixel-url" label="Pixel postback URL" value={pixelUrl(ctx, offer.postback_token)} />
                  <CopyField id="pixel-token" label="Token" value={offer.postback_token} />
                </>
              ) : (
                <p>No pixel URL yet.</p>
              )}
              <ActionButton
                csrf={session.csrfToken}
                action={`/dashboard/offers/${offer.id}/pixel-token`}
                label={offer.postback_token ? 'Rotate token' : 'Create pixel URL'}
                tone="secondary"
                confirm={offer.postback_token ? 'Rotate the token? The current pixel URL stops working.' : undefined}
              />
            </section>
            {/* Not a landmark of its own: the table inside is the "Tracking links" region, named once. */}
            <div>
              <h2 id="links-h">Tracking links</h2>
              <p class="hint">
                One link per active partner; append <code>?sub1=…</code> to <code>sub5</code> for sub-tracking.
              </p>
              {links}
              <Pager
                path={`/dashboard/offers/${offer.id}`}
                query={{ partners: cursor }}
                nextCursor={partners.nextCursor}
                cursorParam="partners"
              />
            </div>
          </div>
        </>
      ),
    });
  };

  app.get('/offers/:id', { schema: { params: IdParams, querystring: OfferQuery } }, async (request, reply) => {
    const offer = await findOffer(ctx.db.read, sessionOf(request).brand.id, request.params.id);
    if (!offer) return notFound(reply, request, 'offer');
    return showEdit(request, reply, offer, request.query.partners || undefined);
  });

  app.post('/offers/:id/pixel-token', { schema: { params: IdParams, body: FormBody({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { id } = request.params;
    return runAction(request, reply, `/dashboard/offers/${id}`, async () => {
      await rotatePostbackToken(ctx, brand.id, id);
      return 'New pixel URL ready: give it to the advertiser; the previous one no longer works.';
    });
  });

  app.post('/offers/:id', { schema: { params: IdParams, body: OfferForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const offer = await findOffer(ctx.db.read, brand.id, request.params.id);
    if (!offer) return notFound(reply, request, 'offer');
    // Fields left as loaded keep what the offer has now: a pause or a payout set meanwhile stays.
    const { [LOADED_FIELD]: loaded, ...submitted } = request.body;
    const values = keepConcurrentChanges(submitted, loaded, offerValues(offer, brand.currency), OFFER_FIELDS);
    const edited = editedFields(submitted, loaded, OFFER_FIELDS);
    try {
      // Only what was changed is checked and written (a form without `_loaded`: every field).
      const input = edited ? offerPatch(values, brand.currency, edited) : offerInput(values, brand.currency);
      const row = await updateOffer(ctx, brand.id, offer.id, input);
      return redirectWithFlash(reply, `/dashboard/offers/${row.id}`, { kind: 'ok', text: 'Offer saved.' });
    } catch (error) {
      // Shown over the offer as it is now, so the next save compares with that.
      return showEdit(request, reply, offer, undefined, values, formError(error));
    }
  });
}
