/**
 * The report builder: up to three dimensions (time, offer, partner, country, device, OS,
 * browser, referrer, sub-ids, hour), filters on the same names, a brand-local date range,
 * a chart of the top rows by clicks and the table — every number from the report service,
 * split by currency as the API is.
 */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { toApiError } from '../../../http/errors.js';
import { AUTOFOCUS } from '../../../web/views/form.js';
import { fromArray, sendCsv } from '../../analytics/csv.js';
import { ATTRIBUTES } from '../../analytics/dimensions.js';
import { GROUP_KEYS, type Report, type ReportRow } from '../../reports/schemas.js';
import { buildReport, reportColumns } from '../../reports/service.js';
import { count, epcMinorUnits, money, percent } from '../format.js';
import { Choice, Query, text } from '../forms.js';
import { offerMenu, offerNames, partnerMenu, partnerNames } from '../repository.js';
import { type DashboardApp, render } from '../respond.js';
import { sessionOf } from '../session.js';
import { BarChart } from '../views/chart.js';
import { EmptyState, OffsetPager } from '../views/components.js';
import { num, Table } from '../views/table.js';

/** Bars in the chart: the rows with the most clicks. */
const TOP_ROWS = 12;
/** Rows on one page of the table, as on the Reports page (the CSV export has them all). */
const ROWS_PER_PAGE = 100;
const PICKERS = ['d1', 'd2', 'd3'] as const;

const filterFields = Object.fromEntries(ATTRIBUTES.map((a) => [a, Type.Optional(Type.String({ maxLength: 255 }))]));

export const AnalyticsQuery = Query({
  from: Type.Optional(Type.String({ maxLength: 10 })),
  to: Type.Optional(Type.String({ maxLength: 10 })),
  d1: Type.Optional(Choice(GROUP_KEYS)),
  d2: Type.Optional(Choice(GROUP_KEYS)),
  d3: Type.Optional(Choice(GROUP_KEYS)),
  ...filterFields,
  /** The offer and partner menus (ids, as the API's `offerId` and `partnerId`). */
  offerId: Type.Optional(Type.String({ maxLength: 64 })),
  partnerId: Type.Optional(Type.String({ maxLength: 64 })),
  /** Rows are computed, not stored, so the table pages by offset. */
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
});

/** The builder's fields (the page's query without its offset). */
type BuilderFields = Record<string, string | undefined>;

/** The page's query as the builder's fields and the table's offset. */
function fieldsOf(query: unknown): { q: BuilderFields; offset: number } {
  const { offset = 0, ...q } = query as BuilderFields & { offset?: number };
  return { q, offset };
}

const LABELS: Record<string, string> = {
  day: 'Day',
  week: 'Week',
  month: 'Month',
  offer: 'Offer',
  partner: 'Partner',
  country: 'Country',
  deviceType: 'Device',
  os: 'OS',
  browser: 'Browser',
  referrerHost: 'Referrer',
  sub1: 'Sub 1',
  sub2: 'Sub 2',
  sub3: 'Sub 3',
  sub4: 'Sub 4',
  sub5: 'Sub 5',
  hour: 'Hour',
};
const rowKey = (key: string) => (key === 'offer' ? 'offerId' : key === 'partner' ? 'partnerId' : key);

/** The report with the names of its offers and partners, which the page shows (the CSV keeps the ids). */
interface NamedReport extends Report {
  names: { offer: Map<string, string>; partner: Map<string, string> };
}

/** The rows the chart shows: the most clicks first. */
function topRows(report: Report): ReportRow[] {
  return [...report.data].sort((a, b) => b.clicks - a.clicks).slice(0, TOP_ROWS);
}

/** The table's rows on the page at `offset`. */
function pageRows(report: Report, offset: number): ReportRow[] {
  return report.data.slice(offset, offset + ROWS_PER_PAGE);
}

/** Names for the rows shown (the table's page and the chart's), not every row of a long report. */
async function namesOf(ctx: AppContext, brandId: string, report: Report, offset: number): Promise<NamedReport> {
  const shown = [...pageRows(report, offset), ...topRows(report)];
  const ids = (key: 'offerId' | 'partnerId') => shown.flatMap((r) => (r[key] ? [r[key]] : []));
  const [offer, partner] = await Promise.all([
    offerNames(ctx.db.read, brandId, ids('offerId')),
    partnerNames(ctx.db.read, brandId, ids('partnerId')),
  ]);
  return { ...report, names: { offer, partner } };
}

function keysOf(row: ReportRow, report: NamedReport): string[] {
  const values = row as unknown as Record<string, string | null | undefined>;
  return report.groupBy.map((k) => {
    const value = values[rowKey(k)];
    if (value == null) return '(none)';
    return (k === 'offer' || k === 'partner' ? report.names[k].get(value) : undefined) ?? value;
  });
}

function ResultTable({ report, offset }: { report: NamedReport; offset: number }) {
  return (
    <Table
      caption={`Report ${report.from} to ${report.to}`}
      columns={[
        ...report.groupBy.map((k) => LABELS[k] ?? k),
        'Currency',
        ...['Clicks', 'Conversions', 'Revenue', 'Payout', 'Conv. rate', 'EPC'].map(num),
      ]}
      rows={pageRows(report, offset).map((r) => [
        ...keysOf(r, report).map((k) => ({ rowHeader: true, text: k })),
        { text: r.currency },
        { class: 'num', text: count(r.clicks) },
        { class: 'num', text: count(r.conversions) },
        { class: 'num', text: money(r.revenueCents, r.currency) },
        { class: 'num', text: money(r.payoutCents, r.currency) },
        { class: 'num', text: percent(r.conversionRate) },
        { class: 'num', text: money(epcMinorUnits(r.payoutCents, r.clicks), r.currency) },
      ])}
      empty={
        report.data.length > 0 ? (
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

function TopChart({ report }: { report: NamedReport }) {
  const top = topRows(report);
  if (top.length === 0 || report.groupBy.length === 0) return '';
  // The chart cuts what does not fit and keeps the full label in a tooltip.
  const labels = top.map((r) => [...keysOf(r, report), r.currency].join(' · '));
  return (
    <BarChart
      id="analytics-chart"
      title={`Top ${top.length} rows by clicks`}
      labels={labels}
      series={[
        { label: 'Clicks', values: top.map((r) => r.clicks) },
        { label: 'Conversions', values: top.map((r) => r.conversions) },
      ]}
      format={(v) => count(v)}
    />
  );
}

/** The builder's names for the API parameters a refusal names. */
const FIELD_NAMES: Record<string, string> = {
  'query.groupBy': 'Dimensions',
  'query.from': 'From',
  'query.to': 'To',
  'query.offerId': 'Offer',
  'query.partnerId': 'Partner',
  ...Object.fromEntries(ATTRIBUTES.map((a) => [`query.${a}`, LABELS[a] ?? a])),
};

/** The dimensions picked (a first visit gets day and country). */
function pickedOf(q: BuilderFields): string[] {
  return Object.keys(q).length === 0 ? ['day', 'country'] : PICKERS.map((p) => text(q[p])).filter(Boolean);
}

/** The builder's fields with the dimensions picked spelled out: the query of its CSV and of its pages. */
function builderQuery(q: BuilderFields, picked: string[]): URLSearchParams {
  const fields = { ...q, ...Object.fromEntries(PICKERS.map((p, i) => [p, picked[i] ?? ''])) };
  return new URLSearchParams(Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined));
}

/** The builder's choices as a report query. */
function reportQueryOf(q: BuilderFields) {
  // Typed on a phone, `Mobile` or `de` is put in its stored case by the report (reports/filters.ts).
  // Otherwise a value is matched as typed, spaces included, as the API matches it (a sub-id
  // may carry them); an empty field is no filter, as an absent parameter is.
  const filters = Object.fromEntries([...ATTRIBUTES, 'offerId', 'partnerId'].flatMap((a) => (q[a] ? [[a, q[a]]] : [])));
  return { from: q.from || undefined, to: q.to || undefined, groupBy: pickedOf(q).join(',') || undefined, ...filters };
}

/** An offer or partner filter: a menu of the brand's, by name, as on the Reports page. */
function MenuFilter(props: {
  name: string;
  label: string;
  items: Array<{ id: string; name: string }>;
  selected: string | undefined;
}) {
  return (
    <div>
      <label for={`f-${props.name}`} safe>
        {props.label}
      </label>
      <select id={`f-${props.name}`} name={props.name}>
        <option value="">All</option>
        {props.items.map((i) => (
          <option value={i.id} selected={i.id === props.selected} safe>
            {i.name}
          </option>
        ))}
      </select>
    </div>
  );
}

export function analyticsPages(app: DashboardApp, ctx: AppContext): void {
  // The report on the page, as CSV (the API's columns); a refused query goes back to the builder, which says why.
  app.get('/analytics/export.csv', { schema: { querystring: AnalyticsQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { q } = fieldsOf(request.query);
    try {
      const report = await buildReport(ctx, brand.id, reportQueryOf(q));
      return sendCsv(reply, `analytics-${report.from}-to-${report.to}`, reportColumns(report), fromArray(report.data));
    } catch (error) {
      if (toApiError(error).status !== 422) throw error;
      const query = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined));
      return reply.redirect(`/dashboard/analytics?${query}`, 303);
    }
  });

  app.get('/analytics', { schema: { querystring: AnalyticsQuery } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { q, offset } = fieldsOf(request.query);
    const picked = pickedOf(q);
    const query = builderQuery(q, picked);
    const [offers, partners] = await Promise.all([
      offerMenu(ctx.db.read, brand.id),
      partnerMenu(ctx.db.read, brand.id),
    ]);
    let report: NamedReport | null = null;
    let problem = '';
    try {
      report = await namesOf(ctx, brand.id, await buildReport(ctx, brand.id, reportQueryOf(q)), offset);
    } catch (error) {
      // A combination the API refuses (Day with Week, a dimension twice, From after To) keeps
      // the builder and its choices, with the problem in the builder's own words.
      const apiError = toApiError(error);
      if (apiError.status !== 422) throw error;
      problem =
        (apiError.details ?? []).map((d) => `${FIELD_NAMES[d.path] ?? d.path}: ${d.message}`).join('; ') ||
        apiError.message;
    }
    return render(request, reply, {
      title: 'Analytics',
      section: 'analytics',
      status: problem ? 422 : 200,
      body: () => (
        <>
          <div class="head">
            <h1>Analytics</h1>
            {report ? (
              <a class="btn secondary" href={`/dashboard/analytics/export.csv?${query}`} download="">
                Export CSV
              </a>
            ) : (
              ''
            )}
          </div>
          <form method="get" action="/dashboard/analytics" class="filters" aria-label="Report builder">
            <div>
              <label for="from">From</label>
              <input id="from" name="from" type="date" value={escapeHtml(text(q.from) || (report?.from ?? ''))} />
            </div>
            <div>
              <label for="to">To</label>
              <input id="to" name="to" type="date" value={escapeHtml(text(q.to) || (report?.to ?? ''))} />
            </div>
            {PICKERS.map((name, i) => (
              <div>
                <label for={name} safe>
                  {`Dimension ${i + 1}`}
                </label>
                <select id={name} name={name}>
                  <option value="">—</option>
                  {GROUP_KEYS.map((k) => (
                    <option value={k} selected={picked[i] === k} safe>
                      {LABELS[k] ?? k}
                    </option>
                  ))}
                </select>
              </div>
            ))}
            <MenuFilter name="offerId" label="Offer" items={offers} selected={q.offerId} />
            <MenuFilter name="partnerId" label="Partner" items={partners} selected={q.partnerId} />
            {ATTRIBUTES.map((a) => (
              <div>
                <label for={`f-${a}`} safe>
                  {LABELS[a] ?? a}
                </label>
                <input
                  id={`f-${a}`}
                  name={a}
                  value={escapeHtml(q[a] ?? '')}
                  placeholder="any"
                  autocapitalize="none"
                  autocomplete="off"
                />
              </div>
            ))}
            <div>
              <button type="submit">Show</button>
            </div>
          </form>
          {problem ? (
            <div class="flash error" role="alert" tabindex="-1" {...AUTOFOCUS} safe>
              {problem}
            </div>
          ) : (
            ''
          )}
          {report ? <TopChart report={report} /> : ''}
          {report ? <ResultTable report={report} offset={offset} /> : ''}
          {report ? (
            <OffsetPager
              path="/dashboard/analytics"
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
}
