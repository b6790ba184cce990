/**
 * Offer caps: daily, weekly (Monday start), monthly and global conversion counts, in the
 * brand's time zone, over non-rejected conversions. Counters are rows incremented in the
 * conversion's own transaction (the row lock serialises concurrent increments, so exactly
 * one conversion sees count = limit); `cap_notifications` makes cap.reached fire once per
 * cap and period even if a rejection lowers the count and it is reached again.
 *
 * A cap set on an offer that already has conversions counts them (applyCapChanges), and a
 * cap lowered to or below its period's count is reached at once.
 */
import { PostgresAdapter, sql } from 'kysely';
import { periodBounds } from '../../calendar.js';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Queryable, Trx } from '../../db/database.js';
import type { CapName } from '../../db/schema.js';
import { recordEvent } from '../events/outbox.js';
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

/**
 * `offer` with its caps as committed now, read in the conversion's transaction: the offer in
 * hand comes from a cache (hotRows.ts) that a PATCH setting a cap may have outdated. On
 * PostgreSQL the row is share-locked until the transaction ends, so a PATCH changing the caps
 * (which locks it FOR UPDATE before counting, offers/service.ts) either waits for this
 * conversion to commit and counts it, or commits first and this read sees its caps. SQLite
 * runs write transactions one at a time: the read alone is current.
 */
export async function withCurrentCaps(trx: Trx, offer: OfferRow): Promise<OfferRow> {
  const caps = await trx
    .selectFrom('offers')
    .select(['cap_daily', 'cap_weekly', 'cap_monthly', 'cap_global'])
    .where('id', '=', offer.id)
    .$if(trx.getExecutor().adapter instanceof PostgresAdapter, (qb) => qb.forShare())
    .executeTakeFirst();
  return caps ? { ...offer, ...caps } : offer;
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
    // At or over: a limit lowered under the count (applyCapChanges) was reached already.
    if (n >= period.limit && (await isFirstReach(trx, offer.id, period, at))) reached.push({ ...period, count: n });
  }
  return { exceeded, reached, counted: periods.map((p) => ({ cap: p.cap, periodStart: p.periodStart })) };
}

/** Claims the one cap.reached of `period`: true the first time only. */
async function isFirstReach(trx: Trx, offerId: string, period: CapPeriod, at: number): Promise<boolean> {
  const first = await trx
    .insertInto('cap_notifications')
    .values({ offer_id: offerId, cap: period.cap, period_start: period.periodStart, created_at: at })
    .onConflict((oc) => oc.columns(['offer_id', 'cap', 'period_start']).doNothing())
    .returning('offer_id')
    .executeTakeFirst();
  return first !== undefined;
}

/** Fires cap.reached for each cap in `reached`. */
export async function recordCapsReached(
  ctx: AppContext,
  trx: Trx,
  brandId: string,
  offerId: string,
  reached: ReachedCap[],
): Promise<void> {
  for (const cap of reached) {
    await recordEvent(ctx, trx, brandId, 'cap.reached', {
      offerId,
      cap: cap.cap,
      limit: cap.limit,
      count: cap.count,
      periodStart: cap.cap === 'global' ? null : toIso(cap.periodStart),
      periodEnd: cap.periodEnd === null ? null : toIso(cap.periodEnd),
    });
  }
}

const CAP_COLUMNS = { daily: 'cap_daily', weekly: 'cap_weekly', monthly: 'cap_monthly', global: 'cap_global' } as const;

/**
 * An offer's caps changed from `before` to `after` (in `trx`, the offer row locked). A cap
 * that was off starts from the non-rejected conversions already recorded in its current
 * period — they are marked as counted by it, so a later rejection uncounts them — and a cap
 * whose new limit is at or under its count is reached now. Returns the caps reached.
 */
export async function applyCapChanges(
  trx: Trx,
  before: OfferRow,
  after: OfferRow,
  timeZone: string,
  at: number,
): Promise<ReachedCap[]> {
  const reached: ReachedCap[] = [];
  for (const period of capPeriods(after, timeZone, at)) {
    const previous = before[CAP_COLUMNS[period.cap]];
    if (previous === period.limit) continue;
    const count = previous === null ? await recount(trx, after.id, period) : await counted(trx, after.id, period);
    if (count >= period.limit && (await isFirstReach(trx, after.id, period, at))) reached.push({ ...period, count });
  }
  return reached;
}

async function counted(trx: Trx, offerId: string, period: CapPeriod): Promise<number> {
  const row = await trx
    .selectFrom('cap_counters')
    .select('count')
    .where('offer_id', '=', offerId)
    .where('cap', '=', period.cap)
    .where('period_start', '=', period.periodStart)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Sets the counter of `period` to the offer's non-rejected conversions in it, marking each as counted. */
async function recount(trx: Trx, offerId: string, period: CapPeriod): Promise<number> {
  const entry = JSON.stringify({ cap: period.cap, periodStart: period.periodStart });
  const inPeriod = sql`offer_id = ${offerId} and status <> 'rejected' and created_at >= ${period.periodStart}${
    period.periodEnd === null ? sql`` : sql` and created_at < ${period.periodEnd}`
  }`;
  // Appends the entry to cap_periods (a JSON array) where it is not there yet.
  await (trx.getExecutor().adapter instanceof PostgresAdapter
    ? sql`update conversions
          set cap_periods = (coalesce(cap_periods, '[]')::jsonb || jsonb_build_array(${entry}::jsonb))::text
          where ${inPeriod} and not coalesce(cap_periods, '[]')::jsonb @> jsonb_build_array(${entry}::jsonb)`
    : sql`update conversions
          set cap_periods = json_insert(coalesce(cap_periods, '[]'), '$[#]', json(${entry}))
          where ${inPeriod} and not exists (
            select 1 from json_each(coalesce(conversions.cap_periods, '[]')) as e
            where json_extract(e.value, '$.cap') = ${period.cap}
              and json_extract(e.value, '$.periodStart') = ${period.periodStart})`
  ).execute(trx);
  const { rows } = await sql<{ n: number }>`select count(*) as n from conversions where ${inPeriod}`.execute(trx);
  const n = Number(rows[0]?.n ?? 0);
  await trx
    .insertInto('cap_counters')
    .values({ offer_id: offerId, cap: period.cap, period_start: period.periodStart, count: n })
    .onConflict((oc) => oc.columns(['offer_id', 'cap', 'period_start']).doUpdateSet({ count: n }))
    .execute();
  return n;
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

/** Each cap of the offer with its count in the period it counts in at `at`. */
export async function capCounts(q: Queryable, offer: OfferRow, timeZone: string, at: number): Promise<ReachedCap[]> {
  const periods = capPeriods(offer, timeZone, at);
  if (periods.length === 0) return [];
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
  return periods.map((p) => {
    const row = rows.find((r) => r.cap === p.cap && Number(r.period_start) === p.periodStart);
    return { ...p, count: Number(row?.count ?? 0) };
  });
}

/** Is any cap of the offer reached right now (count at or over its limit)? */
export async function isAnyCapReached(q: Queryable, offer: OfferRow, timeZone: string, at: number): Promise<boolean> {
  return (await capCounts(q, offer, timeZone, at)).some((c) => c.count >= c.limit);
}
