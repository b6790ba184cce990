/**
 * Every click and every change of a conversion appends one fact — its report counters with
 * the brand-local day and hour, offer, partner, currency and attributes — in the caller's
 * transaction: one narrow insert, the only analytics cost on the tracking link. The fold
 * job (fold.ts) sums facts into analytics_rollups later; reports add the facts not folded
 * yet, so they are exact at any moment.
 */
import type { Queryable } from '../../db/database.js';
import { preparedInsert } from '../../db/prepared.js';
import type { ClickTable, ConversionTable } from '../../db/schema.js';

export interface FactRow {
  brand_id: string;
  day: string;
  hour: string | null;
  offer_id: string;
  partner_id: string;
  currency: string;
  country: string | null;
  device_type: string | null;
  os: string | null;
  browser: string | null;
  referrer_host: string | null;
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue_cents: number;
  payout_cents: number;
}

/** The counters of a fact; every other column is an attribute it is reported by. */
export const FACT_COUNTERS = [
  'clicks',
  'pending',
  'approved',
  'rejected',
  'revenue_cents',
  'payout_cents',
] as const satisfies ReadonlyArray<keyof FactRow>;

export const FACT_COLUMNS = [
  'brand_id',
  'day',
  'hour',
  'offer_id',
  'partner_id',
  'currency',
  'country',
  'device_type',
  'os',
  'browser',
  'referrer_host',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  ...FACT_COUNTERS,
] as const satisfies ReadonlyArray<keyof FactRow>;

const factInsert = preparedInsert<FactRow>('analytics_facts', FACT_COLUMNS);

type Attributed = Pick<
  ClickTable,
  'brand_id' | 'offer_id' | 'partner_id' | 'country' | 'device_type' | 'os' | 'browser' | 'referrer_host'
> &
  Pick<ClickTable, 'sub1' | 'sub2' | 'sub3' | 'sub4' | 'sub5'>;

/**
 * The fact of `row` on `day` and `hour`, with `delta` as its counters, written out as one
 * literal in column order. Spreading the attributes into a literal with more fields
 * (`{ ...attributes(row), day, … }`) made V8 build the object field by field through new
 * hidden classes: ~25 µs and ~7 KB of garbage per fact, as much as the click's SQL.
 */
function factOf(row: Attributed, day: string, hour: string | null, currency: string, delta: Counters): FactRow {
  return {
    brand_id: row.brand_id,
    day,
    hour,
    offer_id: row.offer_id,
    partner_id: row.partner_id,
    currency,
    country: row.country,
    device_type: row.device_type,
    os: row.os,
    browser: row.browser,
    referrer_host: row.referrer_host,
    sub1: row.sub1,
    sub2: row.sub2,
    sub3: row.sub3,
    sub4: row.sub4,
    sub5: row.sub5,
    clicks: delta.clicks ?? 0,
    pending: delta.pending ?? 0,
    approved: delta.approved ?? 0,
    rejected: delta.rejected ?? 0,
    revenue_cents: delta.revenueCents ?? 0,
    payout_cents: delta.payoutCents ?? 0,
  };
}

interface Counters extends ConversionDelta {
  clicks?: number;
}

const ONE_CLICK: Counters = Object.freeze({ clicks: 1 });

/**
 * A click counts in its offer's currency (the currency its conversions are expected in), on
 * the brand-local day and hour it was made.
 */
export async function recordClickFact(q: Queryable, click: Attributed, at: ClickFactTime): Promise<void> {
  await factInsert.execute(q, clickFact(click, at));
}

export interface ClickFactTime {
  day: string;
  hour: string;
  currency: string;
}

/** The fact of one click (for a caller that writes it in a statement of its own making). */
export function clickFact(click: Attributed, at: ClickFactTime): FactRow {
  return factOf(click, at.day, at.hour, at.currency, ONE_CLICK);
}

export interface ConversionDelta {
  pending?: number;
  approved?: number;
  rejected?: number;
  revenueCents?: number;
  payoutCents?: number;
}

type ConversionFacts = Attributed & Pick<ConversionTable, 'local_day' | 'local_hour' | 'currency'>;

/** A conversion's change (created, approved, rejected) counts on the day and hour it was created. */
export async function recordConversionFact(q: Queryable, row: ConversionFacts, delta: ConversionDelta): Promise<void> {
  await factInsert.execute(q, conversionFact(row, delta));
}

/** The fact of a conversion's change (for a caller that writes it in a statement of its own making). */
export function conversionFact(row: ConversionFacts, delta: ConversionDelta): FactRow {
  return factOf(row, row.local_day, row.local_hour, row.currency, delta);
}
