/**
 * The numbers a marketer decides on, the same on every list and detail page: clicks,
 * conversions, revenue, payout and EPC over the last 30 brand-local days.
 */
import { addDays, formatDay, localDay, parseDay } from '../../../calendar.js';
import { count, epcMinorUnits, money } from '../format.js';
import type { CurrencyNumbers, Numbers } from '../trafficQueries.js';
import { num, type TableCell } from './table.js';

export const NUMBERS_DAYS = 30;

export const NUMBER_COLUMNS = [num('Clicks'), num('Conv.'), num('Revenue'), num('Payout'), num('EPC')];

/** The days the numbers cover, ending today in the brand's time zone. */
export function numbersRange(now: number, timeZone: string): { from: string; to: string } {
  const to = localDay(now, timeZone);
  return { from: formatDay(addDays(parseDay(to), 1 - NUMBERS_DAYS)), to };
}

/**
 * Money of each currency apart (`$229.93 · €370.35`), never added together; `currency` (the
 * brand's) names the zero of a row without money. EPC is payout per click of the same
 * currency (clicks count in their offer's currency).
 */
function values(n: Numbers, currency: string): Array<[string, string]> {
  const each = (amount: (m: CurrencyNumbers) => number) =>
    n.money.length === 0 ? money(0, currency) : n.money.map((m) => money(amount(m), m.currency)).join(' · ');
  return [
    ['Clicks', count(n.clicks)],
    ['Conversions', count(n.conversions)],
    ['Revenue', each((m) => m.revenueCents)],
    ['Payout', each((m) => m.payoutCents)],
    ['EPC', each((m) => epcMinorUnits(m.payoutCents, m.clicks))],
  ];
}

/** The numbers as cells of a table row, under NUMBER_COLUMNS. */
export function numberCells(n: Numbers, currency: string): TableCell[] {
  return values(n, currency).map(([, text]) => ({ class: 'num', text }));
}

export function NumberCards({ n, currency, label }: { n: Numbers; currency: string; label: string }) {
  return (
    <dl class="grid" aria-label={label}>
      {values(n, currency).map(([name, v]) => (
        <div class="card">
          <dt safe>{name}</dt>
          <dd safe>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
