/**
 * Clicks: the newest first with where they came from (country, device, OS, browser, referrer
 * host), fraud signals in words and sub-ids; one click's page.
 */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { toPage } from '../../../http/pagination.js';
import { type ClickRow, findClick } from '../../clicks/repository.js';
import { notFound } from '../errors.js';
import { country, device, fraudSignals, subIds } from '../format.js';
import { Choice, Cursor, IdParams, Query, text } from '../forms.js';
import { linkNames, offerMenu, partnerMenu, recentClicks } from '../repository.js';
import { type DashboardApp, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { BackLink, Badge, CreatedLink, EmptyState, LinkProps, Pager, Prop, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';
import { Menu } from './conversions.js';

const PAGE_SIZE = 50;
const ListQuery = Query({
  offerId: Type.Optional(Type.String({ maxLength: 64 })),
  partnerId: Type.Optional(Type.String({ maxLength: 64 })),
  risk: Type.Optional(Choice(['high'] as const)),
  cursor: Cursor,
});

function RiskCell({ click }: { click: ClickRow }) {
  return (
    <>
      {click.high_risk ? <Badge status="failed" label={`high risk ${click.fraud_score}`} /> : click.fraud_score}
      <br />
      <span class="small muted" safe>
        {fraudSignals(click.fraud_signals)}
      </span>
    </>
  );
}

export function clickPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/clicks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const q = ctx.db.read;
    const filters = {
      offerId: text(request.query.offerId) || undefined,
      partnerId: text(request.query.partnerId) || undefined,
      risk: request.query.risk || undefined,
    };
    const cursor = request.query.cursor || undefined;
    const [rows, offers, partners] = await Promise.all([
      recentClicks(q, brand.id, { ...filters, highRisk: Boolean(filters.risk), cursor, limit: PAGE_SIZE }),
      offerMenu(q, brand.id),
      partnerMenu(q, brand.id),
    ]);
    const page = toPage(rows, PAGE_SIZE, (r) => r);
    const offerName = new Map(offers.map((o) => [o.id, o.name]));
    const partnerName = new Map(partners.map((p) => [p.id, p.name]));
    const filtered = Object.values(filters).some(Boolean);
    return render(request, reply, {
      title: 'Clicks',
      section: 'clicks',
      body: () => (
        <>
          <h1>Clicks</h1>
          <details class="filter-panel" open={filtered}>
            <summary>Filters</summary>
            <form method="get" action="/dashboard/clicks" class="filters" aria-label="Filters">
              <Menu name="offerId" label="Offer" items={offers} current={filters.offerId ?? ''} />
              <Menu name="partnerId" label="Partner" items={partners} current={filters.partnerId ?? ''} />
              <div>
                <label class="check">
                  <input type="checkbox" name="risk" value="high" checked={Boolean(filters.risk)} /> High risk only
                </label>
              </div>
              <div>
                <button type="submit">Filter</button> <a href="/dashboard/clicks">Reset</a>
              </div>
            </form>
          </details>
          <Table
            caption="Clicks"
            class="wide"
            columns={['Time', 'Offer', 'Partner', 'Country', 'Device', 'Referrer', num('Fraud score'), 'Sub ids']}
            rows={page.data.map((c) => [
              {
                html: (
                  <CreatedLink
                    href={`/dashboard/clicks/${c.id}`}
                    ms={c.created_at}
                    timeZone={brand.timezone}
                    id={c.id}
                  />
                ),
              },
              { class: 'name', text: offerName.get(c.offer_id) ?? c.offer_id },
              { class: 'name', text: partnerName.get(c.partner_id) ?? c.partner_id },
              {
                html: (
                  <>
                    {escapeHtml(country(c.country) ?? '—')}
                    <br />
                    <span class="muted small mono" safe>
                      {c.ip}
                    </span>
                  </>
                ),
              },
              { class: 'small', text: device(c) ?? '—' },
              { class: 'small url', text: c.referrer_host ?? '—' },
              { class: 'num', html: <RiskCell click={c} /> },
              { class: 'mono small url', text: subIds(c) ?? '—' },
            ])}
            empty={
              <EmptyState title={filtered ? 'No clicks match these filters' : 'No clicks yet'}>
                Clicks appear as partners' tracking links are followed.
              </EmptyState>
            }
          />
          <Pager path="/dashboard/clicks" query={{ ...filters, cursor }} nextCursor={page.nextCursor} />
        </>
      ),
    });
  });

  app.get('/clicks/:id', { schema: { params: IdParams, querystring: Query({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const c = await findClick(ctx.db.read, brand.id, request.params.id);
    if (!c) return notFound(reply, request, 'click');
    const names = await linkNames(ctx.db.read, brand.id, c);
    return render(request, reply, {
      title: `Click ${c.id}`,
      section: 'clicks',
      body: () => (
        <>
          <BackLink href="/dashboard/clicks" label="Clicks" />
          <h1>Click</h1>
          <section class="panel" aria-label="Details">
            <dl class="props">
              <Prop label="Id" mono text={c.id} />
              <Prop label="Time">
                <Time ms={c.created_at} timeZone={brand.timezone} />
              </Prop>
              <LinkProps row={c} names={names} />
              <Prop label="Fraud score">
                <RiskCell click={c} />
              </Prop>
              <Prop label="Country" text={country(c.country) ?? 'unknown'} />
              <Prop label="Device" text={c.device_type ?? 'unknown'} />
              <Prop label="Operating system" text={c.os ?? 'unknown'} />
              <Prop label="Browser" text={c.browser ?? 'unknown'} />
              <Prop label="Referrer host" mono text={c.referrer_host ?? 'none'} />
              <Prop label="IP" mono text={c.ip} />
              <Prop label="User agent" mono text={c.user_agent} />
              <Prop label="Referrer" mono text={c.referer} />
              <Prop label="Sub ids" mono text={subIds(c)} />
            </dl>
          </section>
        </>
      ),
    });
  });
}
