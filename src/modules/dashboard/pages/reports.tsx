/** Reports: date range, offer and partner filters, grouping; table, chart and CSV export. */
import { escapeHtml } from '@kitajs/html';
import { eachDay, formatDay, mondayOf } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { FormView } from '../../../web/views/form.js';
import type { Metrics } from '../../reports/schemas.js';
import { compactMoney, count, day, epcMinorUnits, money, percent } from '../format.js';
import { offerMenu, partnerMenu } from '../repository.js';
import { type DashboardApp, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { BarChart } from '../views/chart.js';
import { EmptyState, OffsetPager } from '../views/components.js';
import { num, Table, type TableCell } from '../views/table.js';
import {
  filterQuery,
  filtersOf,
  type NamedReport,
  type ReportFilters,
  ReportQuery,
  reportCsv,
  runReport,
  TIME_UNITS,
} from './reportData.js';

const ROWS_PER_PAGE = 100;
/** Bars in a chart of offers or partners at most (the largest by revenue). */
const MAX_BARS = 15;
const LABELS = { from: 'From', to: 'To', offerId: 'Offer', partnerId: 'Partner', groupBy: 'Grouping' };

function metricCells(m: Metrics, currency: string): TableCell[] {
  return [
    count(m.clicks),
    count(m.conversions),
    count(m.approved),
    count(m.pending),
    count(m.rejected),
    money(m.revenueCents, currency),
    money(m.payoutCents, currency),
    money(m.profitCents, currency),
    percent(m.conversionRate),
    money(epcMinorUnits(m.payoutCents, m.clicks), currency),
  ].map((text) => ({ class: 'num', text }));
}

function periodsOf(from: string, to: string, unit: 'day' | 'week' | 'month'): string[] {
  const keys: string[] = [];
  for (const d of eachDay(from, to)) {
    const day = formatDay(d);
    const key = unit === 'day' ? day : unit === 'week' ? formatDay(mondayOf(d)) : day.slice(0, 7);
    if (keys[keys.length - 1] !== key) keys.push(key);
  }
  return keys;
}

function ReportChart({ report, currency }: { report: NamedReport; currency: string }) {
  const timeKey = (['day', 'week', 'month'] as const).find((k) => report.groupBy.includes(k));
  const buckets = new Map<string, { revenue: number; payout: number }>();
  // Every period of the range gets a bar, so quiet days show as gaps, not as missing days.
  if (timeKey)
    for (const key of periodsOf(report.from, report.to, timeKey)) buckets.set(key, { revenue: 0, payout: 0 });
  // One currency per chart: amounts in different currencies are never stacked or compared.
  const inCurrency = report.data.filter((r) => r.currency === currency);
  const rows = timeKey
    ? inCurrency
    : [...inCurrency].sort((a, b) => b.revenueCents - a.revenueCents).slice(0, MAX_BARS);
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
  if (buckets.size === 0) return '';
  const labels = [...buckets.keys()];
  return (
    <BarChart
      id={`report-chart-${currency}`}
      title={`${timeKey ? `Revenue and payout per ${timeKey}` : `Revenue and payout, top ${labels.length} by revenue`} (${currency})`}
      labels={labels.map((l) => (timeKey ? day(l, timeKey !== 'month') : l))}
      series={[
        { label: 'Revenue', values: labels.map((l) => buckets.get(l)?.revenue ?? 0) },
        { label: 'Payout', values: labels.map((l) => buckets.get(l)?.payout ?? 0) },
      ]}
      format={(v) => money(v, currency)}
      axisFormat={(v) => compactMoney(v, currency)}
    />
  );
}

const METRIC_COLUMNS = ['Clicks', 'Conversions', 'Approved', 'Pending', 'Rejected', 'Revenue', 'Payout', 'Profit'];

function ReportTable({ report, offset }: { report: NamedReport; offset: number }) {
  const times = TIME_UNITS.filter((u) => report.groupBy.includes(u));
  const groupCols = [
    ...times.map((u) => u[0]!.toUpperCase() + u.slice(1)),
    ...(report.groupBy.includes('offer') ? ['Offer'] : []),
    ...(report.groupBy.includes('partner') ? ['Partner'] : []),
  ];
  // Rows of several currencies say which they are in (a day has a row per currency).
  const perCurrency = report.groupBy.length > 0 && report.totalsByCurrency.length > 1;
  if (perCurrency) groupCols.push('Currency');
  const rows = report.groupBy.length === 0 ? [] : report.data.slice(offset, offset + ROWS_PER_PAGE);
  return (
    <Table
      caption={`Report ${day(report.from)} to ${day(report.to)}`}
      columns={[
        ...(groupCols.length > 0 ? groupCols : ['Range']),
        ...METRIC_COLUMNS.map(num),
        num('Conv. rate'),
        num('EPC'),
      ]}
      rows={rows.map((r) => {
        const keys = [
          ...times.map((u) => (u === 'week' ? `week of ${day(String(r[u]))}` : day(String(r[u] ?? '')))),
          ...(r.offerId !== undefined ? [report.offers.get(r.offerId) ?? r.offerId] : []),
          ...(r.partnerId !== undefined ? [report.partners.get(r.partnerId) ?? r.partnerId] : []),
          ...(perCurrency ? [r.currency] : []),
        ];
        return [...keys.map((k) => ({ rowHeader: true, text: k })), ...metricCells(r, r.currency)];
      })}
      foot={report.totalsByCurrency.map((t) => [
        {
          rowHeader: true,
          span: groupCols.length > 0 ? groupCols.length : undefined,
          text: report.totalsByCurrency.length > 1 ? `Total ${t.currency}` : 'Total',
        },
        ...metricCells(t, t.currency),
      ])}
      empty={
        report.groupBy.length === 0 ? undefined : report.data.length > 0 ? (
          <EmptyState title="No rows on this page">
            The report has {escapeHtml(count(report.data.length))} rows.
          </EmptyState>
        ) : (
          <EmptyState title="No activity in this range">Try a longer range or fewer filters.</EmptyState>
        )
      }
    />
  );
}

function ReportForm(props: {
  form: FormView;
  filters: ReportFilters;
  offers: Array<{ id: string; name: string }>;
  partners: Array<{ id: string; name: string }>;
}) {
  const { form, filters: f } = props;
  const select = (name: 'offerId' | 'partnerId', items: Array<{ id: string; name: string }>) => (
    <div>
      <label for={name} safe>
        {LABELS[name]}
      </label>
      <select id={name} name={name}>
        <option value="">All</option>
        {items.map((i) => (
          <option value={i.id} selected={i.id === f[name]} safe>
            {i.name}
          </option>
        ))}
      </select>
    </div>
  );
  return (
    <form method="get" action="/dashboard/reports" class="filters" aria-label="Report options">
      {form.input('from', { type: 'date' })}
      {form.input('to', { type: 'date' })}
      {select('offerId', props.offers)}
      {select('partnerId', props.partners)}
      <div>
        <label for="time">Group by time</label>
        <select id="time" name="time">
          <option value="">No time grouping</option>
          {TIME_UNITS.map((u) => (
            <option value={u} selected={u === f.time}>
              {u}
            </option>
          ))}
        </select>
      </div>
      <fieldset>
        <legend>Also group by</legend>
        <label class="check">
          <input type="checkbox" name="by" value="offer" checked={f.byOffer} /> Offer
        </label>
        <label class="check">
          <input type="checkbox" name="by" value="partner" checked={f.byPartner} /> Partner
        </label>
      </fieldset>
      <div>
        <button type="submit">Show report</button>
      </div>
    </form>
  );
}

export function reportPages(app: DashboardApp, ctx: AppContext): void {
  app.get('/reports', { schema: { querystring: ReportQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const f = filtersOf(request.query);
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
    const offset = request.query.offset ?? 0;
    const currencies = report?.totalsByCurrency.map((t) => t.currency) ?? [];
    const chartCurrencies = [...currencies].sort((a, b) => Number(b === brand.currency) - Number(a === brand.currency));
    const query = filterQuery(f);
    return render(request, reply, {
      title: 'Reports',
      section: 'reports',
      status: error ? 422 : 200,
      body: () => (
        <>
          <div class="head">
            <h1>Reports</h1>
            {report ? (
              <a class="btn secondary" href={`/dashboard/reports/export.csv?${query.toString()}`} download="">
                Export CSV
              </a>
            ) : (
              ''
            )}
          </div>
          {form.summary()}
          <ReportForm form={form} filters={f} offers={offers} partners={partners} />
          {report ? (
            <>
              <p class="muted" safe>
                {`${day(report.from)} to ${day(report.to)}, days in ${brand.timezone}.`}
              </p>
              {/* One chart per currency, the brand's first: amounts are never mixed or left out. */}
              {report.groupBy.length > 0
                ? chartCurrencies.map((c) => <ReportChart report={report} currency={c} />)
                : ''}
            </>
          ) : (
            ''
          )}
          {report ? <ReportTable report={report} offset={offset} /> : <div class="table-wrap"></div>}
          {/* Rows are computed, not stored, so the report pages by offset (the query keeps repeated `by`). */}
          {report ? (
            <OffsetPager
              path="/dashboard/reports"
              query={query}
              offset={offset}
              pageSize={ROWS_PER_PAGE}
              total={report.data.length}
            />
          ) : (
            ''
          )}
        </>
      ),
    });
  });

  app.get('/reports/export.csv', { schema: { querystring: ReportQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const report = await runReport(ctx, brand.id, filtersOf(request.query));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="affitrack-report-${report.from}-to-${report.to}.csv"`)
      .send(reportCsv(report));
  });
}
