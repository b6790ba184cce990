/**
 * Offer caps: daily, weekly (Monday start), monthly and global conversion counts, in the
 * brand's time zone, over non-rejected conversions. Counters are rows incremented in the
 * conversion's own transaction (the row lock serialises concurrent increments, so exactly
 * one conversion sees count = limit); `cap_notifications` makes cap.reached fire once per
 * cap and period even if a rejection lowers the count and it is reached again.
 */
import { sql } from 'kysely';
import { periodBounds } from '../../calendar.js';
import type { Queryable, Trx } from '../../db/database.js';
import type { CapName } from '../../db/schema.js';
import type { OfferRow } from '../offers/repository.js';

export interface CapPeriod {
  cap: CapName;
  limit: number;
  /** 0 for the global cap. */
  periodStart: number;
  periodEnd: number | null;
}

export interface ReachedCap extends CapPeriod {
  count: number;
}

export function hasCaps(offer: OfferRow): boolean {
  return (
    offer.cap_daily !== null || offer.cap_weekly !== null || offer.cap_monthly !== null || offer.cap_global !== null
  );
}

/** The caps an offer has, with the period each one counts in at instant `at`. */
export function capPeriods(offer: OfferRow, timeZone: string, at: number): CapPeriod[] {
  const periods: CapPeriod[] = [];
  for (const [cap, limit] of [
    ['daily', offer.cap_daily],
    ['weekly', offer.cap_weekly],
    ['monthly', offer.cap_monthly],
  ] as const) {
    if (limit === null) continue;
    const { start, end } = periodBounds(cap, at, timeZone);
    periods.push({ cap, limit, periodStart: start, periodEnd: end });
  }
  if (offer.cap_global !== null)
    periods.push({ cap: 'global', limit: offer.cap_global, periodStart: 0, periodEnd: null });
  return periods;
}

/**
 * Counts a new conversion against every cap of its offer. Returns whether it is over a
 * cap (count beyond the limit) and the caps it made reach their limit for the first time
 * in their period (the caller fires cap.reached for each).
 */
export async function countTowardsCaps(
  trx: Trx,
  offer: OfferRow,
  timeZone: string,
  at: number,
): Promise<{ exceeded: boolean; reached: ReachedCap[]; counted: CountedPeriod[] }> {
  let exceeded = false;
  const reached: ReachedCap[] = [];
  const periods = capPeriods(offer, timeZone, at);
  for (const period of periods) {
    const { count } = await trx
      .insertInto('cap_counters')
      .values({ offer_id: offer.id, cap: period.cap, period_start: period.periodStart, count: 1 })
      .onConflict((oc) =>
        oc
          .columns(['offer_id', 'cap', 'period_start'])
          .doUpdateSet({ count: sql`${sql.ref('cap_counters.count')} + 1` }),
      )
      .returning('count')
      .executeTakeFirstOrThrow();
    const n = Number(count);
    if (n > period.limit) exceeded = true;
    if (n === period.limit) {
      const first = await trx
        .insertInto('cap_notifications')
        .values({ offer_id: offer.id, cap: period.cap, period_start: period.periodStart, created_at: at })
        .onConflict((oc) => oc.columns(['offer_id', 'cap', 'period_start']).doNothing())
        .returning('offer_id')
        .executeTakeFirst();
      if (first) reached.push({ ...period, count: n });
    }
  }
  return { exceeded, reached, counted: periods.map((p) => ({ cap: p.cap, periodStart: p.periodStart })) };
}

export interface CountedPeriod {
  cap: CapName;
  periodStart: number;
}

/** A rejected conversion no longer counts: lowers exactly the counters it incremented. */
export async function uncountFromCaps(trx: Trx, offerId: string, counted: CountedPeriod[]): Promise<void> {
  for (const period of counted) {
    await trx
      .updateTable('cap_counters')
      .set({ count: sql`${sql.ref('count')} - 1` })
      .where('offer_id', '=', offerId)
      .where('cap', '=', period.cap)
      .where('period_start', '=', period.periodStart)
      .where('count', '>', 0)
      .execute();
  }
}

/** Is any cap of the offer reached right now (count at or over its limit)? */
export async function isAnyCapReached(q: Queryable, offer: OfferRow, timeZone: string, at: number): Promise<boolean> {
  const periods = capPeriods(offer, timeZone, at);
  if (periods.length === 0) return false;
  const rows = await q
    .selectFrom('cap_counters')
    .select(['cap', 'period_start', 'count'])
    .where('offer_id', '=', offer.id)
    .where(
      'period_start',
      'in',
      periods.map((p) => p.periodStart),
    )
    .execute();
  return periods.some((p) =>
    rows.some((r) => r.cap === p.cap && Number(r.period_start) === p.periodStart && Number(r.count) >= p.limit),
  );
}
