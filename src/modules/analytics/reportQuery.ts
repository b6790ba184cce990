/**
 * The SQL of a report: sums per requested key and currency over a brand-local day range.
 *
 * - At most one attribute involved (grouped by or filtered on), and not both an offer and a
 *   partner with it: the rollups of that attribute (dimension '' when none) at the level
 *   that has the offers or partners asked for (grains.ts) — all, per offer, per partner, or
 *   per offer and partner without attribute — plus the facts not folded yet, in ONE
 *   statement so both parts come from the same snapshot (a fold committing in between can
 *   neither drop nor double-count).
 * - Two fixed-vocabulary attributes (country, device type, OS, browser, hour) and no offer
 *   or partner: the pair rollups of those two, plus the unfolded facts, the same way.
 * - Anything else (three dimensions, a pair with a free-form attribute such as sub1, an
 *   attribute with an offer or partner and another attribute): the facts of the range,
 *   grouped directly — their joint counts have about as many rows as the facts themselves.
 *
 * Without a time grouping, the rollups with week rows (level 0, pairs) are read a week at a
 * time for the whole weeks of the range and a day at a time around them.
 *
 * Column names come from this module's constants, never from the request; values are
 * parameters.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import { ATTRIBUTE_COLUMN, type Attribute, pairOf } from './dimensions.js';
import {
  DAY_SPAN,
  LEVEL_ALL,
  LEVEL_OFFER,
  LEVEL_OFFER_PARTNER,
  LEVEL_PARTNER,
  type Level,
  type RollupFilter,
  rollupsReadBy,
  type SpanRange,
  spanRanges,
} from './grains.js';

export interface ReportSpec {
  brandId: string;
  from: string;
  to: string;
  byDay: boolean;
  byOffer: boolean;
  byPartner: boolean;
  /** Attributes to split by, in the order asked. */
  attributes: Attribute[];
  offerId?: string;
  partnerId?: string;
  /** Attribute = value filters. */
  filters: Partial<Record<Attribute, string>>;
}

export interface SumsRow {
  day?: string;
  offerId?: string;
  partnerId?: string;
  /** Attribute values (null = unknown / not given). */
  attributes: Partial<Record<Attribute, string | null>>;
  currency: string;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue: number;
  payout: number;
}

const SUMS = sql`sum(clicks) as clicks, sum(pending) as pending, sum(approved) as approved, sum(rejected) as rejected, sum(revenue_cents) as revenue, sum(payout_cents) as payout`;
const COUNTERS = sql`clicks, pending, approved, rejected, revenue_cents, payout_cents`;

/** Which attributes a report involves, grouped by or filtered on. */
export function involvedAttributes(spec: ReportSpec): Attribute[] {
  return [...new Set([...spec.attributes, ...(Object.keys(spec.filters) as Attribute[])])];
}

function keyColumns(spec: ReportSpec): string[] {
  const keys: string[] = [];
  if (spec.byDay) keys.push('day');
  if (spec.byOffer) keys.push('offer_id');
  if (spec.byPartner) keys.push('partner_id');
  return keys;
}

/** The offer and partner filters, for both the rollups and the facts. */
function scopeFilters(spec: ReportSpec): RawBuilder<unknown>[] {
  const filters = [];
  if (spec.offerId !== undefined) filters.push(sql`offer_id = ${spec.offerId}`);
  if (spec.partnerId !== undefined) filters.push(sql`partner_id = ${spec.partnerId}`);
  return filters;
}

function dayFilters(brandId: string, from: string, to: string): RawBuilder<unknown>[] {
  return [sql`brand_id = ${brandId}`, sql`day >= ${from}`, sql`day <= ${to}`];
}

/** The rollup level with the offers or partners a report needs. */
function levelOf(spec: ReportSpec): Level {
  const offer = spec.byOffer || spec.offerId !== undefined;
  const partner = spec.byPartner || spec.partnerId !== undefined;
  if (offer) return partner ? LEVEL_OFFER_PARTNER : LEVEL_OFFER;
  return partner ? LEVEL_PARTNER : LEVEL_ALL;
}

/** The spans to read: weeks only where they exist (`weeks`) and the report is not by day. */
function rangesOf(spec: ReportSpec, weeks: boolean): SpanRange[] {
  return weeks && !spec.byDay ? spanRanges(spec.from, spec.to) : [{ span: DAY_SPAN, from: spec.from, to: spec.to }];
}

/**
 * One statement: each span range of the rollups (`rollup`, given its filters), then the
 * facts not folded yet (`unfolded`, given theirs), summed by `groupBy`.
 */
function sumsOf(
  ranges: SpanRange[],
  rollup: (filters: RawBuilder<unknown>[]) => RawBuilder<unknown>,
  unfolded: RawBuilder<unknown>,
  spec: ReportSpec,
  columns: RawBuilder<unknown>[],
  groupBy: RawBuilder<unknown>[],
) {
  // Every span condition sits beside the day range: each part is one range of an index
  // whose key ends (…, span, day) — see migration 0026.
  const parts = ranges.map(({ span, from, to }) =>
    rollup([sql`span = ${span}`, ...dayFilters(spec.brandId, from, to)]),
  );
  return sql<Record<string, string | number>>`
    select ${sql.join([...columns, SUMS])}
    from (${sql.join([...parts, unfolded], sql` union all `)}) as sums
    group by ${sql.join(groupBy)}`;
}

/** The filter whose index finds a report's rollup rows: the value's, else the partner's, else the offer's. */
function rollupFilter(spec: ReportSpec, value: string | undefined): RollupFilter | undefined {
  if (value !== undefined) return 'value';
  if (spec.partnerId !== undefined) return 'partner_id';
  return spec.offerId !== undefined ? 'offer_id' : undefined;
}

function fromRollups(q: Queryable, spec: ReportSpec, attribute: Attribute | undefined) {
  const level = levelOf(spec);
  const keys = keyColumns(spec).map((c) => sql.ref(c));
  const value = attribute ? spec.filters[attribute] : undefined;
  const filters = [sql`dimension = ${attribute ?? ''}`, sql`level = ${level}`, ...scopeFilters(spec)];
  if (value !== undefined) filters.push(sql`value = ${value}`);
  const columns = [...keys, sql`value`, sql`currency`];
  const table = rollupsReadBy(q, rollupFilter(spec, value));
  const rollup = (range: RawBuilder<unknown>[]) => sql`
    select ${sql.join([...columns, COUNTERS])}
    from ${table} where ${sql.join([...filters, ...range], sql` and `)}`;
  const unfoldedFilters = [sql`folded = 0`, ...dayFilters(spec.brandId, spec.from, spec.to), ...scopeFilters(spec)];
  if (attribute && value !== undefined) unfoldedFilters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  const unfoldedValue = attribute ? sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[attribute])}, '')` : sql`''`;
  const unfolded = sql`
    select ${sql.join([...keys, sql`${unfoldedValue} as value`, sql`currency`, COUNTERS])}
    from analytics_facts where ${sql.join(unfoldedFilters, sql` and `)}`;
  const groupBy = [...keys, sql.ref('value'), sql.ref('currency')];
  return sumsOf(rangesOf(spec, level === LEVEL_ALL), rollup, unfolded, spec, columns, groupBy);
}

function fromPairRollups(spec: ReportSpec, [a, b]: readonly [Attribute, Attribute]) {
  const keys = keyColumns(spec).map((c) => sql.ref(c));
  const filters = [sql`pair = ${`${a},${b}`}`];
  const unfoldedFilters = [sql`folded = 0`, ...dayFilters(spec.brandId, spec.from, spec.to)];
  for (const [attribute, column] of [
    [a, 'first'],
    [b, 'second'],
  ] as const) {
    const value = spec.filters[attribute];
    if (value === undefined) continue;
    filters.push(sql`${sql.ref(column)} = ${value}`);
    unfoldedFilters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  }
  const columns = [...keys, sql`first`, sql`second`, sql`currency`];
  const rollup = (range: RawBuilder<unknown>[]) => sql`
    select ${sql.join([...columns, COUNTERS])}
    from analytics_pair_rollups where ${sql.join([...filters, ...range], sql` and `)}`;
  const unfoldedValues = [a, b].map((attribute) => sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[attribute])}, '')`);
  const unfolded = sql`
    select ${sql.join([...keys, sql`${unfoldedValues[0]} as first`, sql`${unfoldedValues[1]} as second`, sql`currency`, COUNTERS])}
    from analytics_facts where ${sql.join(unfoldedFilters, sql` and `)}`;
  const groupBy = [...keys, sql.ref('first'), sql.ref('second'), sql.ref('currency')];
  return sumsOf(rangesOf(spec, true), rollup, unfolded, spec, columns, groupBy);
}

function fromFacts(spec: ReportSpec) {
  const filters = [...dayFilters(spec.brandId, spec.from, spec.to), ...scopeFilters(spec)];
  for (const [attribute, value] of Object.entries(spec.filters) as Array<[Attribute, string]>) {
    filters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  }
  const keys = [...keyColumns(spec), ...spec.attributes.map((a) => ATTRIBUTE_COLUMN[a])].map((c) => sql.ref(c));
  return sql<Record<string, string | number>>`
    select ${sql.join([...keys, sql`currency`, SUMS])}
    from analytics_facts where ${sql.join(filters, sql` and `)}
    group by ${sql.join([...keys, sql.ref('currency')])}`;
}

/** Where a report's sums come from: which rollups, or the facts. */
function sourceOf(spec: ReportSpec, involved: Attribute[]): 'rollups' | 'pairs' | 'facts' {
  const level = levelOf(spec);
  if (involved.length === 0) return 'rollups';
  if (involved.length === 1) return level === LEVEL_OFFER_PARTNER ? 'facts' : 'rollups';
  return involved.length === 2 && level === LEVEL_ALL && pairOf(involved) ? 'pairs' : 'facts';
}

export async function readReportSums(q: Queryable, spec: ReportSpec): Promise<SumsRow[]> {
  const involved = involvedAttributes(spec);
  const source = sourceOf(spec, involved);
  const pair = source === 'pairs' ? pairOf(involved) : undefined;
  // Which column of the result holds each attribute's value.
  const columnOf = (attribute: Attribute): string =>
    source === 'rollups' ? 'value' : pair ? (attribute === pair[0] ? 'first' : 'second') : ATTRIBUTE_COLUMN[attribute];
  const query =
    source === 'rollups' ? fromRollups(q, spec, involved[0]) : pair ? fromPairRollups(spec, pair) : fromFacts(spec);
  const { rows } = await query.execute(q);
  return rows.map((raw) => {
    const attributes: SumsRow['attributes'] = {};
    for (const attribute of spec.attributes) {
      const value = raw[columnOf(attribute)];
      attributes[attribute] = value === null || value === undefined || value === '' ? null : String(value);
    }
    const row: SumsRow = {
      attributes,
      currency: String(raw.currency),
      clicks: Number(raw.clicks ?? 0),
      pending: Number(raw.pending ?? 0),
      approved: Number(raw.approved ?? 0),
      rejected: Number(raw.rejected ?? 0),
      revenue: Number(raw.revenue ?? 0),
      payout: Number(raw.payout ?? 0),
    };
    if (spec.byDay) row.day = String(raw.day);
    if (spec.byOffer) row.offerId = String(raw.offer_id);
    if (spec.byPartner) row.partnerId = String(raw.partner_id);
    return row;
  });
}
