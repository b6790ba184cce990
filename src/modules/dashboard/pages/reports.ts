/** Reports: date range, offer and partner filters, grouping; table, chart and CSV export. */
import type { FastifyInstance } from 'fastify';
import { addDays, formatDay, mondayOf, parseDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import type { Metrics } from '../../reports/schemas.js';
import { barChart } from '../chart.js';
import { emptyState } from '../components.js';
import { count, money, percent } from '../format.js';
import { FormView } from '../forms.js';
import { html, type SafeHtml } from '../html.js';
import { offerMenu, partnerMenu } from '../repository.js';
import { queryParam, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { filterQuery, filtersOf, type NamedReport, reportCsv, runReport, TIME_UNITS } from './reportData.js';

const ROWS_PER_PAGE = 100;
/** Bars in a chart of offers or partners at most (the largest by revenue). */
const MAX_BARS = 15;
const LABELS = { from: 'From', to: 'To', offerId: 'Offer', partnerId: 'Partner', groupBy: 'Grouping' };

function metricCells(m: Metrics, currency: string): SafeHtml {
  return html`<td class="num">${count(m.clicks)}</td><td class="num">${count(m.conversions)}</td><td class="num">${count(m.approved)}</td>
<td class="num">${count(m.pending)}</td><td class="num">${count(m.rejected)}</td><td class="num">${money(m.revenueCents, currency)}</td>
<td class="num">${money(m.payoutCents, currency)}</td><td class="num">${money(m.profitCents, currency)}</td><td class="num">${percent(m.conversionRate)}</td>
<td class="num">${money(Math.round(m.epcCents), currency)}</td>`;
}

function periodsOf(from: string, to: string, unit: 'day' | 'week' | 'month'): string[] {
  const keys: string[] = [];
  for (let d = parseDay(from); formatDay(d) <= to; d = addDays(d, 1)) {
    const day = formatDay(d);
    const key = unit === 'day' ? day : unit === 'week' ? formatDay(mondayOf(d)) : day.slice(0, 7);
    if (keys[keys.length - 1] !== key) keys.push(key);
  }
  return keys;
}

function chartOf(report: NamedReport, currency: string): SafeHtml {
  const timeKey = (['day', 'week', 'month'] as const).find((k) => report.groupBy.includes(k));
  const buckets = new Map<string, { revenue: number; payout: number }>();
  // Every period of the range gets a bar, so quiet days show as gaps, not as missing days.
  if (timeKey)
    for (const key of periodsOf(report.from, report.to, timeKey)) buckets.set(key, { revenue: 0, payout: 0 });
  const rows = timeKey
    ? report.data
    : [...report.data].sort((a, b) => b.revenueCents - a.revenueCents).slice(0, MAX_BARS);
  for (const r of rows) {
    const label = timeKey
      ? String(r[timeKey])
      : [r.offerId ? report.offers.get(r.offerId) : '', r.partnerId ? report.partners.get(r.partnerId) : '']
          .filter(Boolean)
          .join(' · ');
    const bucket = buckets.get(label) ?? { revenue: 0, payout: 0 };
    bucket.revenue += r.revenueCents;
    bucket.payout += r.payoutCents;
    buckets.set(label, bucket);
  }
  if (buckets.size === 0) return html``;
  const labels = [...buckets.keys()];
  return barChart({
    id: 'report-chart',
    title: timeKey ? `Revenue and payout per ${timeKey}` : `Revenue and payout, top ${labels.length} by revenue`,
    labels: labels.map((l) => (timeKey === 'day' ? l.slice(5) : l.length > 18 ? `${l.slice(0, 17)}…` : l)),
    series: [
      { label: 'Revenue', values: labels.map((l) => buckets.get(l)?.revenue ?? 0) },
      { label: 'Payout', values: labels.map((l) => buckets.get(l)?.payout ?? 0) },
    ],
    format: (v) => money(v, currency),
  });
}

/** Rows are computed, not stored, so the report pages by offset (the query keeps repeated `by`). */
function reportPager(query: URLSearchParams, offset: number, hasMore: boolean): SafeHtml {
  if (offset === 0 && !hasMore) return html``;
  const at = (n: number) => {
    const params = new URLSearchParams(query);
    if (n > 0) params.set('offset', String(n));
    return `/dashboard/reports?${params}`;
  };
  return html`<nav class="pager" aria-label="Pagination">${offset > 0 ? html`<a href="${at(0)}">« First page</a>` : ''}${
    hasMore
      ? html`<a href="${at(offset + ROWS_PER_PAGE)}" rel="next">Next page »</a>`
      : html`<span class="muted">Last page</span>`
  }</nav>`;
}

export function reportPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/reports', async (request, reply) => {
    const { brand } = sessionOf(request);
    const f = filtersOf(request);
    const [offers, partners] = await Promise.all([
      offerMenu(ctx.db.read, brand.id),
      partnerMenu(ctx.db.read, brand.id),
    ]);
    let report: NamedReport | null = null;
    let error: ApiError | undefined;
    try {
      report = await runReport(ctx, brand.id, f);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 422) throw e;
      error = e;
    }
    const form = new FormView({ from: f.from || (report?.from ?? ''), to: f.to || (report?.to ?? '') }, LABELS, error);
    const offset = Math.max(0, Number.parseInt(queryParam(request, 'offset'), 10) || 0);
    const cur = brand.currency;
    const groupCols = report
      ? [
          ...TIME_UNITS.filter((u) => report?.groupBy.includes(u)).map((u) => u[0]!.toUpperCase() + u.slice(1)),
          ...(report.groupBy.includes('offer') ? ['Offer'] : []),
          ...(report.groupBy.includes('partner') ? ['Partner'] : []),
        ]
      : [];
    const pageRows = report
      ? report.groupBy.length === 0
        ? []
        : report.data.slice(offset, offset + ROWS_PER_PAGE)
      : [];
    const query = filterQuery(f);
    const table = !report
      ? html``
      : report.groupBy.length > 0 && report.data.length === 0
        ? emptyState('No activity in this range', 'Try a longer range or fewer filters.')
        : html`<table><caption class="visually-hidden">Report ${report.from} to ${report.to}</caption><thead><tr>${groupCols.length > 0 ? groupCols.map((c) => html`<th scope="col">${c}</th>`) : html`<th scope="col">Range</th>`}
<th scope="col" class="num">Clicks</th><th scope="col" class="num">Conversions</th><th scope="col" class="num">Approved</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Rejected</th>
<th scope="col" class="num">Revenue</th><th scope="col" class="num">Payout</th><th scope="col" class="num">Profit</th><th scope="col" class="num">Conv. rate</th><th scope="col" class="num">EPC</th></tr></thead>
<tbody>${pageRows.map((r) => {
            const keys = [
              ...TIME_UNITS.filter((u) => report?.groupBy.includes(u)).map((u) => String(r[u] ?? '')),
              ...(r.offerId !== undefined ? [report?.offers.get(r.offerId) ?? r.offerId] : []),
              ...(r.partnerId !== undefined ? [report?.partners.get(r.partnerId) ?? r.partnerId] : []),
            ];
            return html`<tr>${keys.map((k) => html`<th scope="row">${k}</th>`)}${metricCells(r, cur)}</tr>`;
          })}</tbody>
<tfoot><tr>${groupCols.length > 0 ? html`<th scope="row" colspan="${groupCols.length}">Total</th>` : html`<th scope="row">Total</th>`}${metricCells(report.totals, cur)}</tr></tfoot></table>`;
    const hasMore = report ? offset + ROWS_PER_PAGE < report.data.length : false;
    const select = (name: 'offerId' | 'partnerId', items: Array<{ id: string; name: string }>) =>
      html`<div><label for="${name}">${LABELS[name]}</label><select id="${name}" name="${name}"><option value="">All</option>${items.map(
        (i) => html`<option value="${i.id}"${i.id === f[name] ? html` selected` : ''}>${i.name}</option>`,
      )}</select></div>`;
    return render(ctx, request, reply, {
      title: 'Reports',
      section: 'reports',
      status: error ? 422 : 200,
      body: () => html`<div class="head"><h1>Reports</h1>${report ? html`<a class="btn secondary" href="/dashboard/reports/export.csv?${query.toString()}" download>Export CSV</a>` : ''}</div>
${form.summary()}
<form method="get" action="/dashboard/reports" class="filters" aria-label="Report options">
${form.input('from', { type: 'date' })}${form.input('to', { type: 'date' })}
${select('offerId', offers)}${select('partnerId', partners)}
<div><label for="time">Group by time</label><select id="time" name="time"><option value="">No time grouping</option>${TIME_UNITS.map(
        (u) => html`<option value="${u}"${u === f.time ? html` selected` : ''}>${u}</option>`,
      )}</select></div>
<fieldset><legend>Also group by</legend><label class="check"><input type="checkbox" name="by" value="offer"${f.byOffer ? html` checked` : ''}> Offer</label>
<label class="check"><input type="checkbox" name="by" value="partner"${f.byPartner ? html` checked` : ''}> Partner</label></fieldset>
<div><button type="submit">Show report</button></div></form>
${report ? html`<p class="muted">${report.from} to ${report.to}, days in ${brand.timezone}.</p>${report.groupBy.length > 0 ? chartOf(report, cur) : ''}` : ''}
<div class="table-wrap">${table}</div>
${reportPager(query, offset, hasMore)}`,
    });
  });

  app.get('/reports/export.csv', async (request, reply) => {
    const { brand } = sessionOf(request);
    const report = await runReport(ctx, brand.id, filtersOf(request));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="affitrack-report-${report.from}-to-${report.to}.csv"`)
      .send(reportCsv(report, brand.currency));
  });
}
