/** Overview: today and the last 30 days at a glance, and what needs a person's attention. */
import type { FastifyInstance } from 'fastify';
import { addDays, formatDay, localDay, parseDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { listClicks } from '../../clicks/repository.js';
import { listConversions } from '../../conversions/repository.js';
import type { Metrics } from '../../reports/schemas.js';
import { buildReport } from '../../reports/service.js';
import { barChart } from '../chart.js';
import { badge, emptyState } from '../components.js';
import { count, money, time } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { countByStatus, failingSubscriptions, offerNames, partnerNames } from '../repository.js';
import { render } from '../respond.js';
import { sessionOf } from '../session.js';

const RANGE_DAYS = 30;
const ATTENTION_ROWS = 5;
const FAILING_WINDOW_MS = 7 * 24 * 3600 * 1000;

function cards(heading: string, id: string, m: Metrics, currency: string): SafeHtml {
  const items: Array<[string, string]> = [
    ['Clicks', count(m.clicks)],
    ['Conversions', count(m.conversions)],
    ['Revenue', money(m.revenueCents, currency)],
    ['Payout', money(m.payoutCents, currency)],
    ['Profit', money(m.profitCents, currency)],
  ];
  return html`<section aria-labelledby="${id}"><h2 id="${id}">${heading}</h2>
<dl class="grid">${items.map(([label, value]) => html`<div class="card"><dt>${label}</dt><dd>${value}</dd></div>`)}</dl></section>`;
}

export function overviewPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/', async (request, reply) => {
    const { brand } = sessionOf(request);
    const q = ctx.db.read;
    const now = ctx.clock.now();
    const today = localDay(now, brand.timezone);
    const from = formatDay(addDays(parseDay(today), 1 - RANGE_DAYS));
    const [report, pending, pendingTotal, risky, failing, applicants] = await Promise.all([
      buildReport(ctx, brand.id, { from, to: today, groupBy: 'day' }),
      listConversions(q, brand.id, { status: 'pending', limit: ATTENTION_ROWS }),
      countByStatus(q, 'conversions', brand.id, 'pending'),
      listClicks(q, brand.id, { highRisk: true, limit: ATTENTION_ROWS }),
      failingSubscriptions(q, brand.id, now - FAILING_WINDOW_MS, ATTENTION_ROWS),
      countByStatus(q, 'partners', brand.id, 'applicant'),
    ]);
    const byDay = new Map(report.data.map((row) => [row.day ?? '', row]));
    const days = Array.from({ length: RANGE_DAYS }, (_, i) => formatDay(addDays(parseDay(from), i)));
    const zero: Metrics = { ...report.totals };
    for (const key of Object.keys(zero) as Array<keyof Metrics>) zero[key] = 0;
    const todayMetrics = byDay.get(today) ?? zero;
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
    const cur = brand.currency;
    const tz = brand.timezone;

    const pendingTable =
      pending.length === 0
        ? emptyState('Nothing to review', 'Every conversion has been decided.')
        : html`<table><caption>${count(pendingTotal)} pending in total</caption>
<thead><tr><th scope="col">Recorded</th><th scope="col">Offer</th><th scope="col">Partner</th><th scope="col" class="num">Revenue</th></tr></thead>
<tbody>${pending.map(
            (c) => html`<tr><td><a href="/dashboard/conversions/${c.id}">${time(c.created_at, tz)}</a></td>
<td>${offers.get(c.offer_id) ?? c.offer_id}</td><td>${partners.get(c.partner_id) ?? c.partner_id}</td><td class="num">${money(c.revenue_cents, c.currency)}</td></tr>`,
          )}</tbody></table>`;
    const riskyTable =
      risky.length === 0
        ? emptyState('No high-risk clicks', `No click scored above the threshold of ${brand.fraud_threshold}.`)
        : html`<table><caption>Score above ${brand.fraud_threshold}</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Partner</th><th scope="col">IP</th><th scope="col" class="num">Score</th><th scope="col">Signals</th></tr></thead>
<tbody>${risky.map(
            (
              c,
            ) => html`<tr><td>${time(c.created_at, tz)}</td><td><a href="/dashboard/partners/${c.partner_id}">${partners.get(c.partner_id) ?? c.partner_id}</a></td>
<td class="mono">${c.ip}</td><td class="num">${c.fraud_score}</td><td>${(JSON.parse(c.fraud_signals) as string[]).join(', ')}</td></tr>`,
          )}</tbody></table>`;
    const failingTable =
      failing.length === 0
        ? emptyState('All subscriptions healthy', 'No failed deliveries in the last 7 days.')
        : html`<table><caption>Failed or retrying deliveries, last 7 days</caption>
<thead><tr><th scope="col">Endpoint</th><th scope="col" class="num">Failing</th><th scope="col">Last failure</th></tr></thead>
<tbody>${failing.map(
            (
              s,
            ) => html`<tr><td><a href="/dashboard/webhooks/${s.id}" class="mono">${s.url}</a> ${s.status === 'disabled' ? badge('disabled') : ''}</td>
<td class="num"><a href="/dashboard/deliveries?status=failed">${count(s.failing)}</a></td><td>${time(s.last_at, tz)}</td></tr>`,
          )}</tbody></table>`;

    return render(ctx, request, reply, {
      title: 'Overview',
      section: 'overview',
      body: () => html`<div class="head"><h1>Overview</h1>
<p class="actions">${applicants > 0 ? html`<a class="btn secondary" href="/dashboard/partners?status=applicant">${count(applicants)} applicant${applicants === 1 ? '' : 's'} to review</a>` : ''}
<a class="btn secondary" href="/dashboard/reports">Open reports</a></p></div>
${cards(`Today (${today})`, 'today', todayMetrics, cur)}
${cards(`Last ${RANGE_DAYS} days`, 'month', report.totals, cur)}
<h2>Trend</h2>
${barChart({
  id: 'trend',
  title: `Revenue and payout per day, ${from} to ${today}`,
  labels: days.map((d) => d.slice(5)),
  series: [
    { label: 'Revenue', values: days.map((d) => byDay.get(d)?.revenueCents ?? 0) },
    { label: 'Payout', values: days.map((d) => byDay.get(d)?.payoutCents ?? 0) },
  ],
  format: (v) => money(v, cur),
})}
<div class="cols">
<section aria-labelledby="pending-h"><div class="head"><h2 id="pending-h">Pending conversions to review</h2><a href="/dashboard/conversions?status=pending">Review all</a></div><div class="table-wrap">${pendingTable}</div></section>
<section aria-labelledby="risk-h"><div class="head"><h2 id="risk-h">Recent high-risk clicks</h2><a href="/dashboard/settings/blocklist">Blocklist</a></div><div class="table-wrap">${riskyTable}</div></section>
</div>
<section aria-labelledby="failing-h"><div class="head"><h2 id="failing-h">Failing subscriptions</h2><a href="/dashboard/deliveries?status=failed">Delivery log</a></div><div class="table-wrap">${failingTable}</div></section>`,
    });
  });
}
