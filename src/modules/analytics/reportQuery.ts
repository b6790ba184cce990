/**
 * The SQL of a report: sums per requested key and currency over a brand-local day range.
 *
 * - At most one attribute involved (grouped by or filtered on): the rollups of that
 *   attribute (dimension '' when none) at the coarsest level that still has the offers or
 *   partners asked for, plus the facts not folded yet, in ONE statement so both parts come
 *   from the same snapshot (a fold committing in between can neither drop nor double-count).
 * - Two fixed-vocabulary attributes (country, device type, OS, browser, hour) and no offer
 *   or partner: the pair rollups of those two, plus the unfolded facts, the same way.
 * - Anything else (three attributes, a pair with a free-form one such as sub1, or a pair
 *   with an offer or partner): the facts of the range, grouped directly — their joint
 *   counts have about as many rows as the facts themselves.
 *
 * Column names come from this module's constants, never from the request; values are
 * parameters.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import { ATTRIBUTE_COLUMN, type Attribute, pairOf } from './dimensions.js';

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

function commonFilters(spec: ReportSpec): RawBuilder<unknown>[] {
  const filters = [sql`brand_id = ${spec.brandId}`, sql`day >= ${spec.from}`, sql`day <= ${spec.to}`];
  if (spec.offerId !== undefined) filters.push(sql`offer_id = ${spec.offerId}`);
  if (spec.partnerId !== undefined) filters.push(sql`partner_id = ${spec.partnerId}`);
  return filters;
}

function fromRollups(spec: ReportSpec, attribute: Attribute | undefined) {
  const level = spec.byPartner || spec.partnerId !== undefined ? 2 : spec.byOffer || spec.offerId !== undefined ? 1 : 0;
  const filters = [sql`dimension = ${attribute ?? ''}`, sql`level = ${level}`, ...commonFilters(spec)];
  const value = attribute ? spec.filters[attribute] : undefined;
  if (value !== undefined) filters.push(sql`value = ${value}`);
  const keys = keyColumns(spec).map((c) => sql.ref(c));
  const unfoldedFilters = [sql`folded = 0`, ...commonFilters(spec)];
  if (attribute && value !== undefined) unfoldedFilters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  const unfoldedValue = attribute ? sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[attribute])}, '')` : sql`''`;
  const groupBy = [...keys, sql.ref('value'), sql.ref('currency')];
  return sql<Record<string, string | number>>`
    select ${sql.join([...keys, sql`value`, sql`currency`, SUMS])}
    from (
      select ${sql.join([...keys, sql`value`, sql`currency`, COUNTERS])}
      from analytics_rollups where ${sql.join(filters, sql` and `)}
      union all
      select ${sql.join([...keys, sql`${unfoldedValue} as value`, sql`currency`, COUNTERS])}
      from analytics_facts where ${sql.join(unfoldedFilters, sql` and `)}
    ) as sums
    group by ${sql.join(groupBy)}`;
}

function fromPairRollups(spec: ReportSpec, [a, b]: readonly [Attribute, Attribute]) {
  const keys = keyColumns(spec).map((c) => sql.ref(c));
  const filters = [sql`pair = ${`${a},${b}`}`, ...commonFilters(spec)];
  const unfoldedFilters = [sql`folded = 0`, ...commonFilters(spec)];
  for (const [attribute, column] of [
    [a, 'first'],
    [b, 'second'],
  ] as const) {
    const value = spec.filters[attribute];
    if (value === undefined) continue;
    filters.push(sql`${sql.ref(column)} = ${value}`);
    unfoldedFilters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  }
  const unfoldedValues = [a, b].map((attribute) => sql`coalesce(${sql.ref(ATTRIBUTE_COLUMN[attribute])}, '')`);
  return sql<Record<string, string | number>>`
    select ${sql.join([...keys, sql`first`, sql`second`, sql`currency`, SUMS])}
    from (
      select ${sql.join([...keys, sql`first`, sql`second`, sql`currency`, COUNTERS])}
      from analytics_pair_rollups where ${sql.join(filters, sql` and `)}
      union all
      select ${sql.join([...keys, sql`${unfoldedValues[0]} as first`, sql`${unfoldedValues[1]} as second`, sql`currency`, COUNTERS])}
      from analytics_facts where ${sql.join(unfoldedFilters, sql` and `)}
    ) as sums
    group by ${sql.join([...keys, sql.ref('first'), sql.ref('second'), sql.ref('currency')])}`;
}

function fromFacts(spec: ReportSpec) {
  const filters = commonFilters(spec);
  for (const [attribute, value] of Object.entries(spec.filters) as Array<[Attribute, string]>) {
    filters.push(sql`${sql.ref(ATTRIBUTE_COLUMN[attribute])} = ${value}`);
  }
  const keys = [...keyColumns(spec), ...spec.attributes.map((a) => ATTRIBUTE_COLUMN[a])].map((c) => sql.ref(c));
  return sql<Record<string, string | number>>`
    select ${sql.join([...keys, sql`currency`, SUMS])}
    from analytics_facts where ${sql.join(filters, sql` and `)}
    group by ${sql.join([...keys, sql.ref('currency')])}`;
}

export async function readReportSums(q: Queryable, spec: ReportSpec): Promise<SumsRow[]> {
  const involved = involvedAttributes(spec);
  const pair = spec.byOffer || spec.byPartner || spec.offerId || spec.partnerId ? undefined : pairOf(involved);
  // Which column of the result holds each attribute's value.
  const columnOf = (attribute: Attribute): string =>
    involved.length <= 1 ? 'value' : pair ? (attribute === pair[0] ? 'first' : 'second') : ATTRIBUTE_COLUMN[attribute];
  const query =
    involved.length <= 1 ? fromRollups(spec, involved[0]) : pair ? fromPairRollups(spec, pair) : fromFacts(spec);
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
