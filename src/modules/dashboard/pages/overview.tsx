/**
 * Overview: today and the last 30 days at a glance (with where the clicks came from: top
 * countries and device types), and what needs a person's attention.
 */
import { addDays, formatDay, localDay, parseDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { listConversions } from '../../conversions/repository.js';
import type { Metrics, Report } from '../../reports/schemas.js';
import { buildReport } from '../../reports/service.js';
import { failingSubscriptions } from '../deliveryQueries.js';
import { compactMoney, count, country, day, fraudSignals, money, percent } from '../format.js';
import { Query } from '../forms.js';
import { countByStatus, offerNames, partnerNames, recentClicks } from '../repository.js';
import { type DashboardApp, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { pendingConversionCount } from '../trafficQueries.js';
import { BarChart } from '../views/chart.js';
import { Badge, EmptyState, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';

const RANGE_DAYS = 30;
const ATTENTION_ROWS = 5;
const FAILING_WINDOW_MS = 7 * 24 * 3600 * 1000;

function Cards({
  heading,
  id,
  metrics,
  currency,
}: {
  heading: string;
  id: string;
  metrics: Metrics;
  currency: string;
}) {
  const items: Array<[string, string]> = [
    ['Clicks', count(metrics.clicks)],
    ['Conversions', count(metrics.conversions)],
    ['Revenue', money(metrics.revenueCents, currency)],
    ['Payout', money(metrics.payoutCents, currency)],
    ['Profit', money(metrics.profitCents, currency)],
  ];
  return (
    <section aria-labelledby={id}>
      <h2 id={id} safe>
        {heading}
      </h2>
      <dl class="grid">
        {items.map(([label, value]) => (
          <div class="card">
            <dt safe>{label}</dt>
            <dd safe>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

/** Rows of the top countries and device types. */
const TOP_VALUES = 5;

interface TopValue {
  value: string | null;
  clicks: number;
  conversions: number;
}

/**
 * The values of one dimension with the most clicks, summed over currencies (a report row is
 * per value and currency; clicks and conversions are counts, so adding them is sound).
 */
function topValues(report: Report, key: 'country' | 'deviceType'): { top: TopValue[]; clicks: number } {
  const byValue = new Map<string | null, TopValue>();
  let clicks = 0;
  for (const row of report.data) {
    const value = row[key] ?? null;
    const entry = byValue.get(value) ?? { value, clicks: 0, conversions: 0 };
    entry.clicks += row.clicks;
    entry.conversions += row.conversions;
    byValue.set(value, entry);
    clicks += row.clicks;
  }
  const top = [...byValue.values()]
    .filter((v) => v.clicks > 0 || v.conversions > 0)
    .sort((a, b) => b.clicks - a.clicks || b.conversions - a.conversions)
    .slice(0, TOP_VALUES);
  return { top, clicks };
}

function TopTable(props: {
  id: string;
  heading: string;
  column: string;
  report: Report;
  dimension: 'country' | 'deviceType';
}) {
  const { top, clicks } = topValues(props.report, props.dimension);
  const name = (v: string | null) => (props.dimension === 'country' ? (country(v) ?? 'Unknown') : (v ?? 'Unknown'));
  return (
    <section aria-labelledby={props.id}>
      <div class="head">
        <h2 id={props.id} safe>
          {props.heading}
        </h2>
        <a href={`/dashboard/analytics?d1=${props.dimension}`}>Open in analytics</a>
      </div>
      <Table
        caption={`${props.heading}, last ${RANGE_DAYS} days, by clicks`}
        showCaption
        columns={[props.column, num('Clicks'), num('Share'), num('Conversions')]}
        rows={top.map((v) => [
          { text: name(v.value) },
          { class: 'num', text: count(v.clicks) },
          { class: 'num', text: clicks > 0 ? percent(v.clicks / clicks) : '—' },
          { class: 'num', text: count(v.conversions) },
        ])}
        empty={<EmptyState title="No clicks yet">Clicks of the last {RANGE_DAYS} days appear here.</EmptyState>}
      />
    </section>
  );
}

export function overviewPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/', { schema: { querystring: Query({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const q = ctx.db.read;
    const now = ctx.clock.now();
    const today = localDay(now, brand.timezone);
    const from = formatDay(addDays(parseDay(today), 1 - RANGE_DAYS));
    const [report, countries, devices, pending, pendingTotal, risky, failing, applicants] = await Promise.all([
      buildReport(ctx, brand.id, { from, to: today, groupBy: 'day' }),
      // From the analytics rollups (one row per value and day), brand-local days like the rest.
      buildReport(ctx, brand.id, { from, to: today, groupBy: 'country' }),
      buildReport(ctx, brand.id, { from, to: today, groupBy: 'deviceType' }),
      listConversions(q, brand.id, { status: 'pending', limit: ATTENTION_ROWS }),
      pendingConversionCount(q, brand.id),
      recentClicks(q, brand.id, { highRisk: true, limit: ATTENTION_ROWS }).then((r) => r.slice(0, ATTENTION_ROWS)),
      failingSubscriptions(q, brand.id, now - FAILING_WINDOW_MS, ATTENTION_ROWS),
      countByStatus(q, 'partners', brand.id, 'applicant'),
    ]);
    // Money is shown per currency, never added across them: a trend per currency, the brand's
    // own first (only it when there is no money yet).
    const totals = report.totalsByCurrency;
    const trendCurrencies = totals.length > 0 ? totals.map((t) => t.currency) : [brand.currency];
    trendCurrencies.sort((a, b) => Number(b === brand.currency) - Number(a === brand.currency));
    const daysIn = (currency: string) =>
      new Map(report.data.filter((row) => row.currency === currency).map((row) => [row.day ?? '', row]));
    const days = Array.from({ length: RANGE_DAYS }, (_, i) => formatDay(addDays(parseDay(from), i)));
    const zero: Metrics = { ...report.totalsByCurrency[0]! };
    for (const key of Object.keys(zero) as Array<keyof Metrics>) zero[key] = 0;
    const suffix = (currency: string) => (totals.length > 1 ? ` in ${currency}` : '');
    const [offers, partners] = await Promise.all([
      offerNames(
        q,
        brand.id,
        [...pending, ...risky].map((r) => r.offer_id),
      ),
      partnerNames(
        q,
        brand.id,
        [...pending, ...risky].map((r) => r.partner_id),
      ),
    ]);
    const tz = brand.timezone;

    const pendingTable = (
      <Table
        caption={`${count(pendingTotal)} pending in total`}
        showCaption
        columns={['Recorded', 'Offer', 'Partner', num('Revenue')]}
        rows={pending.map((c) => [
          {
            html: (
              <a href={`/dashboard/conversions/${c.id}`}>
                <Time ms={c.created_at} timeZone={tz} />
              </a>
            ),
          },
          { class: 'name', text: offers.get(c.offer_id) ?? c.offer_id },
          { class: 'name', text: partners.get(c.partner_id) ?? c.partner_id },
          { class: 'num', text: money(c.revenue_cents, c.currency) },
        ])}
        empty={<EmptyState title="Nothing to review">Every conversion has been decided.</EmptyState>}
      />
    );
    const riskyTable = (
      <Table
        caption={`Score above ${brand.fraud_threshold}`}
        showCaption
        columns={['Time', 'Partner', 'IP', num('Score'), 'Signals']}
        rows={risky.map((c) => [
          {
            html: (
              <a href={`/dashboard/clicks/${c.id}`}>
                <Time ms={c.created_at} timeZone={tz} />
              </a>
            ),
          },
          {
            class: 'name',
            html: (
              <a href={`/dashboard/partners/${c.partner_id}`} safe>
                {partners.get(c.partner_id) ?? c.partner_id}
              </a>
            ),
          },
          { class: 'mono', text: c.ip },
          { class: 'num', text: c.fraud_score },
          { text: fraudSignals(c.fraud_signals) },
        ])}
        empty={
          <EmptyState title="No high-risk clicks">
            No click scored above the threshold of {brand.fraud_threshold}.
          </EmptyState>
        }
      />
    );
    const failingTable = (
      <Table
        caption="Failed or retrying deliveries, last 7 days"
        showCaption
        columns={['Endpoint', num('Failing'), 'Last failure']}
        rows={failing.map((s) => [
          {
            html: (
              <>
                <a href={`/dashboard/webhooks/${s.id}`} class="mono" safe>
                  {s.url}
                </a>{' '}
                {s.status === 'disabled' ? <Badge status="disabled" /> : ''}
              </>
            ),
          },
          {
            class: 'num',
            html: (
              <a href="/dashboard/deliveries?status=failed" safe>
                {count(s.failing)}
              </a>
            ),
          },
          { html: <Time ms={s.last_at} timeZone={tz} /> },
        ])}
        empty={<EmptyState title="All subscriptions healthy">No failed deliveries in the last 7 days.</EmptyState>}
      />
    );

    return render(request, reply, {
      title: 'Overview',
      section: 'overview',
      body: () => (
        <>
          <div class="head">
            <h1>Overview</h1>
            <p class="actions">
              {applicants > 0 ? (
                <a class="btn secondary" href="/dashboard/partners?status=applicant" safe>
                  {`${count(applicants)} applicant${applicants === 1 ? '' : 's'} to review`}
                </a>
              ) : (
                ''
              )}
              <a class="btn secondary" href="/dashboard/reports">
                Open reports
              </a>
            </p>
          </div>
          {totals.map((t) => (
            <Cards
              heading={`Today (${day(today)})${suffix(t.currency)}`}
              id={`today-${t.currency}`}
              metrics={daysIn(t.currency).get(today) ?? zero}
              currency={t.currency}
            />
          ))}
          {totals.map((t) => (
            <Cards
              heading={`Last ${RANGE_DAYS} days${suffix(t.currency)}`}
              id={`month-${t.currency}`}
              metrics={t}
              currency={t.currency}
            />
          ))}
          <h2>Trend</h2>
          {trendCurrencies.map((cur) => {
            const byDay = daysIn(cur);
            return (
              <BarChart
                id={`trend-${cur}`}
                title={`Revenue and payout per day (${cur}), ${day(from)} to ${day(today)}`}
                labels={days.map((d) => day(d, true))}
                series={[
                  { label: 'Revenue', values: days.map((d) => byDay.get(d)?.revenueCents ?? 0) },
                  { label: 'Payout', values: days.map((d) => byDay.get(d)?.payoutCents ?? 0) },
                ]}
                format={(v) => money(v, cur)}
                axisFormat={(v) => compactMoney(v, cur)}
              />
            );
          })}
          <div class="cols">
            <TopTable
              id="countries-h"
              heading="Top countries"
              column="Country"
              report={countries}
              dimension="country"
            />
            <TopTable id="devices-h" heading="Device types" column="Device" report={devices} dimension="deviceType" />
          </div>
          <div class="cols">
            <section aria-labelledby="pending-h">
              <div class="head">
                <h2 id="pending-h">Pending conversions to review</h2>
                <a href="/dashboard/conversions?status=pending">Review all</a>
              </div>
              {pendingTable}
            </section>
            <section aria-labelledby="risk-h">
              <div class="head">
                <h2 id="risk-h">Recent high-risk clicks</h2>
                <a href="/dashboard/clicks?risk=high">All high-risk clicks</a>
              </div>
              {riskyTable}
            </section>
          </div>
          <section aria-labelledby="failing-h">
            <div class="head">
              <h2 id="failing-h">Failing subscriptions</h2>
              <a href="/dashboard/deliveries?status=failed">Delivery log</a>
            </div>
            {failingTable}
          </section>
        </>
      ),
    });
  });
}
