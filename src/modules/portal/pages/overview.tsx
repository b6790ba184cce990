/** Overview: clicks, conversions and earnings per day for a chosen range, with a chart. */
import { Type } from '@sinclair/typebox';
import { eachDay, formatDay } from '../../../calendar.js';
import type { AppContext } from '../../../context.js';
import { InvalidError } from '../../../errors.js';
import { type ApiError, toApiError } from '../../../http/errors.js';
import { count, money } from '../../dashboard/format.js';
import { Query } from '../../dashboard/forms.js';
import { BarChart } from '../../dashboard/views/chart.js';
import { num, Table } from '../../dashboard/views/table.js';
import { type PartnerReport, partnerReport } from '../partnerData.js';
import { type PortalApp, renderPortal } from '../respond.js';
import { DayRangeForm } from '../views/dayRange.js';
import { partnerSessionOf } from '../web.js';

const Day = Type.Optional(Type.String({ maxLength: 20 }));
const OverviewQuery = Query({ from: Day, to: Day });

function daysOf(report: PartnerReport): string[] {
  return eachDay(report.from, report.to).map(formatDay);
}

export function overviewPage(app: PortalApp, ctx: AppContext): void {
  app.get('/', { schema: { querystring: OverviewQuery } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const scope = { brandId: session.brand.id, partnerId: session.partner.id };
    let report: PartnerReport | null = null;
    let error: ApiError | undefined;
    try {
      report = await partnerReport(ctx, scope, {
        from: request.query.from || undefined,
        to: request.query.to || undefined,
      });
    } catch (e) {
      if (!(e instanceof InvalidError)) throw e;
      error = toApiError(e);
    }
    const range = new DayRangeForm(
      { from: report?.from ?? request.query.from ?? '', to: report?.to ?? request.query.to ?? '' },
      { from: 'From', to: 'To' },
      error,
    );
    const cur = session.brand.currency;
    return renderPortal(request, reply, {
      title: 'Overview',
      section: 'overview',
      status: report ? 200 : 422,
      body: () => {
        const days = report ? daysOf(report) : [];
        // Counts add up across currencies; earnings are charted per currency, never added up.
        const byDay = new Map<string, { clicks: number; conversions: number }>();
        const earned = new Map<string, number>(); // `${currency} ${day}` → payout cents
        for (const r of report?.data ?? []) {
          const day = byDay.get(r.day) ?? { clicks: 0, conversions: 0 };
          day.clicks += r.clicks;
          day.conversions += r.conversions;
          byDay.set(r.day, day);
          earned.set(`${r.currency} ${r.day}`, (earned.get(`${r.currency} ${r.day}`) ?? 0) + r.payoutCents);
        }
        // The brand's currency first; only it while nothing is earned.
        const earnedIn = (report?.totalsByCurrency ?? []).map((t) => t.currency);
        const currencies =
          earnedIn.length === 0 ? [cur] : earnedIn.sort((a, b) => Number(b === cur) - Number(a === cur));
        const sum = (key: 'clicks' | 'conversions' | 'approved') =>
          (report?.totalsByCurrency ?? []).reduce((n, t) => n + t[key], 0);
        const earnings = (report?.totalsByCurrency ?? []).map((t) => money(t.payoutCents, t.currency)).join(' · ');
        return (
          <>
            <h1>Overview</h1>
            {range.summary()}
            <form method="get" action="/portal" class="filters">
              {range.input('from', { type: 'date' })}
              {range.input('to', { type: 'date' })}
              <div>
                <button type="submit">Show</button>
              </div>
            </form>
            {report ? (
              <>
                <dl class="grid">
                  {(
                    [
                      ['Clicks', count(sum('clicks'))],
                      ['Conversions', count(sum('conversions'))],
                      ['Approved', count(sum('approved'))],
                      ['Earnings', earnings || money(0, cur)],
                    ] as const
                  ).map(([label, value]) => (
                    <div class="card">
                      <dt>{label}</dt>
                      <dd safe>{value}</dd>
                    </div>
                  ))}
                </dl>
                {currencies.map((c) => (
                  <BarChart
                    id={`earnings-${c}`}
                    title={`Earnings per day in ${c}, ${report.from} to ${report.to}`}
                    labels={days.map((d) => d.slice(5))}
                    series={[{ label: 'Earnings', values: days.map((d) => earned.get(`${c} ${d}`) ?? 0) }]}
                    format={(v) => money(v, c)}
                  />
                ))}
                <BarChart
                  id="traffic"
                  title="Clicks and conversions per day"
                  labels={days.map((d) => d.slice(5))}
                  series={[
                    { label: 'Clicks', values: days.map((d) => byDay.get(d)?.clicks ?? 0) },
                    { label: 'Conversions', values: days.map((d) => byDay.get(d)?.conversions ?? 0) },
                  ]}
                  format={(v) => count(v)}
                />
                <Table
                  caption="Per day"
                  columns={['Day', 'Currency', num('Clicks'), num('Conversions'), num('Approved'), num('Earnings')]}
                  rows={report.data.map((r) => [
                    { text: r.day },
                    { text: r.currency },
                    { class: 'num', text: count(r.clicks) },
                    { class: 'num', text: count(r.conversions) },
                    { class: 'num', text: count(r.approved) },
                    { class: 'num', text: money(r.payoutCents, r.currency) },
                  ])}
                />
                <p class="muted" safe>
                  {`Days in ${session.brand.timezone}; earnings in each offer's currency, over pending and approved conversions.`}
                </p>
              </>
            ) : (
              ''
            )}
          </>
        );
      },
    });
  });
}
