import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { ConversionTable } from '../../db/schema.js';
import type { EventData } from '../events/schemas.js';
import type { Conversion } from './schemas.js';

export type ConversionRow = Selectable<ConversionTable>;

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
    createdAt: toIso(row.created_at),
  };
}

function commonEventFields(row: ConversionRow) {
  return {
    conversionId: row.id,
    partnerId: row.partner_id,
    offerId: row.offer_id,
    revenueCents: row.revenue_cents,
    payoutCents: row.payout_cents,
    currency: row.currency,
  };
}

export function createdEventData(row: ConversionRow): EventData<'conversion.created'> {
  return {
    ...commonEventFields(row),
    status: row.status as 'pending' | 'approved',
    sub1: row.sub1,
    externalTxnId: row.external_txn_id,
  };
}

function decisionFields(row: ConversionRow) {
  return {
    sub1: row.sub1,
    externalTxnId: row.external_txn_id,
    approvedAt: toIsoOrNull(row.approved_at),
    rejectedAt: toIsoOrNull(row.rejected_at),
    rejectionReason: row.rejection_reason,
  };
}

export function approvedEventData(
  row: ConversionRow,
  approvedBy: 'manual' | 'hold_expired',
): EventData<'conversion.approved'> {
  return { ...commonEventFields(row), status: 'approved', ...decisionFields(row), approvedBy };
}

export function rejectedEventData(row: ConversionRow): EventData<'conversion.rejected'> {
  return { ...commonEventFields(row), status: 'rejected', ...decisionFields(row), approvedBy: null };
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
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}
