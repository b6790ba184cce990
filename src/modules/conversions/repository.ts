import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import { prepared, preparedInsert } from '../../db/prepared.js';
import type { ConversionTable } from '../../db/schema.js';
import type { ConversionDelta } from '../analytics/facts.js';
import { visitorToApi } from '../analytics/schemas.js';
import type { EventData } from '../events/schemas.js';
import { parseMetadata } from '../metadata.js';
import type { Conversion } from './schemas.js';

export type ConversionRow = Selectable<ConversionTable>;

export interface RecordResult {
  row: ConversionRow;
  /** false when an earlier conversion with the same externalTxnId was returned. */
  created: boolean;
}

export function conversionToApi(row: ConversionRow): Conversion {
  return {
    id: row.id,
    offerId: row.offer_id,
    partnerId: row.partner_id,
    clickId: row.click_id,
    status: row.status,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
    currency: row.currency,
    sub1: row.sub1,
    sub2: row.sub2,
    sub3: row.sub3,
    sub4: row.sub4,
    sub5: row.sub5,
    externalTxnId: row.external_txn_id,
    capExceeded: row.cap_exceeded === 1,
    holdUntil: toIsoOrNull(row.hold_until),
    approvedAt: toIsoOrNull(row.approved_at),
    rejectedAt: toIsoOrNull(row.rejected_at),
    rejectionReason: row.rejection_reason,
    metadata: parseMetadata(row.metadata),
    ...visitorToApi(row),
    createdAt: toIso(row.created_at),
  };
}

// The event data below is written out field by field, in the order the spec lists the fields
// (JSON keeps it): a literal that starts by spreading another object (`{ ...common(row), … }`)
// costs V8 microseconds and kilobytes of garbage per object, and one is built per conversion.

export function createdEventData(row: ConversionRow): EventData<'conversion.created'> {
  return {
    conversionId: row.id,
    partnerId: row.partner_id,
    offerId: row.offer_id,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
    currency: row.currency,
    metadata: parseMetadata(row.metadata),
    status: row.status as 'pending' | 'approved',
    sub1: row.sub1,
    externalTxnId: row.external_txn_id,
  };
}

/** What a new conversion adds to its report counters. */
export function createdDelta(row: ConversionRow): ConversionDelta {
  return {
    pending: row.status === 'pending' ? 1 : 0,
    approved: row.status === 'approved' ? 1 : 0,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
  };
}

function decidedEventData<S extends 'approved' | 'rejected', B>(row: ConversionRow, status: S, approvedBy: B) {
  return {
    conversionId: row.id,
    partnerId: row.partner_id,
    offerId: row.offer_id,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
    currency: row.currency,
    metadata: parseMetadata(row.metadata),
    status,
    sub1: row.sub1,
    externalTxnId: row.external_txn_id,
    approvedAt: toIsoOrNull(row.approved_at),
    rejectedAt: toIsoOrNull(row.rejected_at),
    rejectionReason: row.rejection_reason,
    approvedBy,
  };
}

export function approvedEventData(
  row: ConversionRow,
  approvedBy: 'manual' | 'hold_expired',
): EventData<'conversion.approved'> {
  return decidedEventData(row, 'approved', approvedBy);
}

export function rejectedEventData(row: ConversionRow): EventData<'conversion.rejected'> {
  return decidedEventData(row, 'rejected', null);
}

export function findConversion(q: Queryable, brandId: string, id: string): Promise<ConversionRow | undefined> {
  return q
    .selectFrom('conversions')
    .selectAll()
    .where('id', '=', id)
    .where('brand_id', '=', brandId)
    .executeTakeFirst();
}

export interface ConversionFilter {
  status?: ConversionRow['status'];
  offerId?: string;
  partnerId?: string;
  externalTxnId?: string;
  fromMs?: number;
  toMs?: number;
  /** Brand-local days (YYYY-MM-DD), inclusive: the conversion's creation day, as in the reports. */
  fromDay?: string;
  toDay?: string;
  /**
   * Id bounds, `fromId` inclusive: ids sort by the moment they were made (ids.ts), so a time
   * range given as ids is an index range of the brand's conversions, however far back it lies.
   */
  fromId?: string;
  beforeId?: string;
  cursor?: string;
  limit: number;
}

export function listConversions(q: Queryable, brandId: string, f: ConversionFilter): Promise<ConversionRow[]> {
  let query = q.selectFrom('conversions').selectAll().where('brand_id', '=', brandId);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.offerId) query = query.where('offer_id', '=', f.offerId);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.externalTxnId) query = query.where('external_txn_id', '=', f.externalTxnId);
  if (f.fromMs !== undefined) query = query.where('created_at', '>=', f.fromMs);
  if (f.toMs !== undefined) query = query.where('created_at', '<=', f.toMs);
  if (f.fromDay !== undefined) query = query.where('local_day', '>=', f.fromDay);
  if (f.toDay !== undefined) query = query.where('local_day', '<=', f.toDay);
  if (f.fromId !== undefined) query = query.where('id', '>=', f.fromId);
  if (f.beforeId !== undefined) query = query.where('id', '<', f.beforeId);
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

export const CONVERSION_COLUMNS = [
  'id',
  'brand_id',
  'offer_id',
  'partner_id',
  'click_id',
  'status',
  'revenue_cents',
  'payout_cents',
  'currency',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'external_txn_id',
  'cap_exceeded',
  'cap_periods',
  'hold_until',
  'approved_at',
  'approved_by',
  'rejected_at',
  'rejection_reason',
  'local_day',
  'local_hour',
  'country',
  'device_type',
  'os',
  'browser',
  'referrer_host',
  'created_at',
  'metadata',
] as const satisfies ReadonlyArray<keyof ConversionRow>;

// The unique index on (offer_id, external_txn_id) decides duplicates: a concurrent twin
// either inserts first (and this insert does nothing) or finds this row.
const conversionInsert = preparedInsert<ConversionRow, { id: string }, 'conversions'>(
  'conversions',
  CONVERSION_COLUMNS,
  (insert) => insert.onConflict((oc) => oc.columns(['offer_id', 'external_txn_id']).doNothing()).returning('id'),
);
const conversionByTxn = prepared(2, (q, offerId: string, txnId: string) =>
  q.selectFrom('conversions').selectAll().where('offer_id', '=', offerId).where('external_txn_id', '=', txnId),
);

/** Inserts the conversion unless one with the same externalTxnId exists for the offer; returns that one then. */
export async function insertConversionOnce(q: Queryable, row: ConversionRow): Promise<ConversionRow | null> {
  const inserted = await conversionInsert.execute(q, row);
  if (inserted.length > 0) return null;
  return (await earlierTwin(q, row)) ?? null;
}

/** The conversion stored before `row` with the same externalTxnId for the offer, if any. */
export async function earlierTwin(q: Queryable, row: ConversionRow): Promise<ConversionRow | undefined> {
  if (row.external_txn_id === null) return undefined;
  return conversionByTxn.first(q, row.offer_id, row.external_txn_id);
}
