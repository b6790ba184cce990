/** Queries of the payout ledger. Amounts are summed in SQL per partner and currency, never across currencies. */
import { type Selectable, sql } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { PayoutRunTable, PayoutTable } from '../../db/schema.js';
import type { Balance, Payout } from './schemas.js';

export type PayoutRow = Selectable<PayoutTable>;
export type PayoutRunRow = Selectable<PayoutRunTable>;

export function payoutToApi(row: PayoutRow): Payout {
  return {
    id: row.id,
    partnerId: row.partner_id,
    currency: row.currency,
    status: row.status,
    amountCents: row.amount_cents,
    conversionCount: row.conversion_count,
    upTo: toIso(row.up_to),
    reference: row.reference,
    createdAt: toIso(row.created_at),
    paidAt: toIsoOrNull(row.paid_at),
    cancelledAt: toIsoOrNull(row.cancelled_at),
  };
}

export interface PayableFilter {
  brandId: string;
  upTo: number;
  partnerId?: string;
}

/** Approved conversions approved at or before `upTo` and in no created or paid payout. */
function payable(q: Queryable, f: PayableFilter) {
  let query = q
    .selectFrom('conversions as c')
    .where('c.brand_id', '=', f.brandId)
    .where('c.status', '=', 'approved')
    .where('c.approved_at', '<=', f.upTo)
    .where((eb) =>
      eb.not(
        eb.exists(eb.selectFrom('payout_items as i').select('i.payout_id').whereRef('i.conversion_id', '=', 'c.id')),
      ),
    );
  if (f.partnerId) query = query.where('c.partner_id', '=', f.partnerId);
  return query;
}

export interface PayableGroup {
  partnerId: string;
  partnerName: string;
  currency: string;
  amountCents: number;
  conversionCount: number;
}

export async function payableGroups(q: Queryable, f: PayableFilter): Promise<PayableGroup[]> {
  const rows = await payable(q, f)
    .innerJoin('partners as p', 'p.id', 'c.partner_id')
    .select([
      'c.partner_id',
      'p.name',
      'c.currency',
      sql<number>`sum(c.payout_cents)`.as('amount'),
      sql<number>`count(*)`.as('n'),
    ])
    .groupBy(['c.partner_id', 'p.name', 'c.currency'])
    .orderBy('c.partner_id')
    .orderBy('c.currency')
    .execute();
  return rows.map((r) => ({
    partnerId: r.partner_id,
    partnerName: r.name,
    currency: r.currency,
    amountCents: Number(r.amount),
    conversionCount: Number(r.n),
  }));
}

/** Moves the group's payable conversions into `payoutId` (one INSERT … SELECT); returns their sum and count. */
export async function fillPayout(
  q: Queryable,
  f: PayableFilter & { partnerId: string },
  currency: string,
  payoutId: string,
): Promise<{ amountCents: number; conversionCount: number }> {
  await q
    .insertInto('payout_items')
    .columns(['conversion_id', 'payout_id', 'amount_cents'])
    .expression(
      payable(q, f)
        .where('c.currency', '=', currency)
        .select(['c.id', sql<string>`cast(${payoutId} as text)`.as('payout_id'), 'c.payout_cents']),
    )
    .execute();
  const totals = await q
    .selectFrom('payout_items')
    .select([sql<number>`coalesce(sum(amount_cents), 0)`.as('amount'), sql<number>`count(*)`.as('n')])
    .where('payout_id', '=', payoutId)
    .executeTakeFirstOrThrow();
  return { amountCents: Number(totals.amount), conversionCount: Number(totals.n) };
}

export function findPayout(q: Queryable, brandId: string, id: string): Promise<PayoutRow | undefined> {
  return q.selectFrom('payouts').selectAll().where('id', '=', id).where('brand_id', '=', brandId).executeTakeFirst();
}

export function findRun(
  q: Queryable,
  brandId: string,
  upTo: number,
  partnerFilter: string,
): Promise<PayoutRunRow | undefined> {
  return q
    .selectFrom('payout_runs')
    .selectAll()
    .where('brand_id', '=', brandId)
    .where('up_to', '=', upTo)
    .where('partner_filter', '=', partnerFilter)
    .executeTakeFirst();
}

export function payoutsOfRun(q: Queryable, runId: string): Promise<PayoutRow[]> {
  return q.selectFrom('payouts').selectAll().where('run_id', '=', runId).orderBy('id').execute();
}

/**
 * What a run already made pays, as preview lines: its payouts that are not cancelled (a
 * cancelled one pays nothing, and repeating the run does not pay its conversions again).
 */
export async function runPayingLines(q: Queryable, runId: string): Promise<PayableGroup[]> {
  const rows = await q
    .selectFrom('payouts as o')
    .innerJoin('partners as p', 'p.id', 'o.partner_id')
    .select(['o.partner_id', 'p.name', 'o.currency', 'o.amount_cents', 'o.conversion_count'])
    .where('o.run_id', '=', runId)
    .where('o.status', '<>', 'cancelled')
    .orderBy('o.partner_id')
    .orderBy('o.currency')
    .execute();
  return rows.map((r) => ({
    partnerId: r.partner_id,
    partnerName: r.name,
    currency: r.currency,
    amountCents: Number(r.amount_cents),
    conversionCount: Number(r.conversion_count),
  }));
}

export interface PayoutFilter {
  status?: PayoutRow['status'];
  partnerId?: string;
  currency?: string;
  cursor?: string;
  limit: number;
}

export function listPayouts(q: Queryable, brandId: string, f: PayoutFilter): Promise<PayoutRow[]> {
  let query = q.selectFrom('payouts').selectAll().where('brand_id', '=', brandId);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.currency) query = query.where('currency', '=', f.currency);
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

export function payoutConversions(q: Queryable, payoutId: string) {
  return q
    .selectFrom('payout_items as i')
    .innerJoin('conversions as c', 'c.id', 'i.conversion_id')
    .select(['c.id', 'c.offer_id', 'i.amount_cents', 'c.approved_at', 'c.created_at', 'c.external_txn_id'])
    .where('i.payout_id', '=', payoutId)
    .orderBy('c.id')
    .execute();
}

/** The created or paid payout holding a conversion, if any. */
export function payoutHolding(
  q: Queryable,
  conversionId: string,
): Promise<{ id: string; status: PayoutRow['status'] } | undefined> {
  return q
    .selectFrom('payout_items as i')
    .innerJoin('payouts as p', 'p.id', 'i.payout_id')
    .select(['p.id', 'p.status'])
    .where('i.conversion_id', '=', conversionId)
    .executeTakeFirst();
}

export interface PartnerBalance extends Balance {
  partnerId: string;
}

/**
 * The ledger of each partner in `partnerIds`, per currency: pending conversions, approved
 * ones in no payout (payable), in a created payout, and in a paid one. Rejected conversions
 * count nowhere. Cancelled payouts hold no items, so their conversions are payable again.
 */
export async function partnerBalances(q: Queryable, brandId: string, partnerIds: string[]): Promise<PartnerBalance[]> {
  if (partnerIds.length === 0) return [];
  const rows = await q
    .selectFrom('conversions as c')
    .leftJoin('payout_items as i', 'i.conversion_id', 'c.id')
    .leftJoin('payouts as p', 'p.id', 'i.payout_id')
    .where('c.brand_id', '=', brandId)
    .where('c.partner_id', 'in', partnerIds)
    .where('c.status', '!=', 'rejected')
    .select([
      'c.partner_id',
      'c.currency',
      sql<number>`sum(case when c.status = 'pending' then c.payout_cents else 0 end)`.as('pending'),
      sql<number>`sum(case when c.status = 'approved' and p.id is null then c.payout_cents else 0 end)`.as('payable'),
      sql<number>`sum(case when p.status = 'created' then c.payout_cents else 0 end)`.as('in_payout'),
      sql<number>`sum(case when p.status = 'paid' then c.payout_cents else 0 end)`.as('paid'),
    ])
    .groupBy(['c.partner_id', 'c.currency'])
    .orderBy('c.partner_id')
    .orderBy('c.currency')
    .execute();
  return rows.map((r) => ({
    partnerId: r.partner_id,
    currency: r.currency,
    pendingCents: Number(r.pending),
    payableCents: Number(r.payable),
    inPayoutCents: Number(r.in_payout),
    paidCents: Number(r.paid),
  }));
}

/** The payout method and account the partner entered in the portal (null when none). */
export async function partnerPayoutDetails(
  q: Queryable,
  partnerId: string,
): Promise<{ payout_method: string | null; payout_account: string | null }> {
  const row = await q
    .selectFrom('partner_accounts')
    .select(['payout_method', 'payout_account'])
    .where('partner_id', '=', partnerId)
    .executeTakeFirst();
  return { payout_method: row?.payout_method ?? null, payout_account: row?.payout_account ?? null };
}
