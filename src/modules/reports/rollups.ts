/**
 * Maintains the report rollups in the caller's transaction: every conversion change (and,
 * later, every click) adds its delta to the day × offer × partner row and to the coarser
 * day × offer row. Reports then read a handful of rows instead of scanning conversions.
 */
import { sql } from 'kysely';
import type { Trx } from '../../db/database.js';

export interface RollupKey {
  brandId: string;
  day: string;
  offerId: string;
  partnerId: string;
}

export interface RollupDelta {
  clicks?: number;
  pending?: number;
  approved?: number;
  rejected?: number;
  revenueCents?: number;
  payoutCents?: number;
}

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;

export async function addToRollups(trx: Trx, key: RollupKey, delta: RollupDelta): Promise<void> {
  const values = {
    clicks: delta.clicks ?? 0,
    pending: delta.pending ?? 0,
    approved: delta.approved ?? 0,
    rejected: delta.rejected ?? 0,
    revenue_cents: delta.revenueCents ?? 0,
    payout_cents: delta.payoutCents ?? 0,
  };
  const base = { brand_id: key.brandId, day: key.day, offer_id: key.offerId };
  // Table names below are constants of this module, never input.
  const increment = (table: string) =>
    Object.fromEntries(COUNTERS.map((c) => [c, sql`${sql.ref(`${table}.${c}`)} + ${sql.ref(`excluded.${c}`)}`]));
  await trx
    .insertInto('rollups_offer_partner')
    .values({ ...base, partner_id: key.partnerId, ...values })
    .onConflict((oc) =>
      oc.columns(['brand_id', 'day', 'offer_id', 'partner_id']).doUpdateSet(increment('rollups_offer_partner')),
    )
    .execute();
  await trx
    .insertInto('rollups_offer')
    .values({ ...base, ...values })
    .onConflict((oc) => oc.columns(['brand_id', 'day', 'offer_id']).doUpdateSet(increment('rollups_offer')))
    .execute();
}
