/**
 * Maintains the report rollups in the caller's transaction: every conversion change (and,
 * later, every click) adds its delta to the day × offer × partner row and to the coarser
 * day × offer row. Reports then read a handful of rows instead of scanning conversions.
 */
import { sql } from 'kysely';
import type { Trx } from '../../db/database.js';
import { preparedInsert } from '../../db/prepared.js';

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

/** `table.counter + excluded.counter` for every counter; table names are constants of this module. */
function increments(table: 'rollups_offer_partner' | 'rollups_offer') {
  return Object.fromEntries(COUNTERS.map((c) => [c, sql`${sql.ref(`${table}.${c}`)} + ${sql.ref(`excluded.${c}`)}`]));
}

const upsertOfferPartner = preparedInsert<Record<string, unknown>, unknown, 'rollups_offer_partner'>(
  'rollups_offer_partner',
  ['brand_id', 'day', 'offer_id', 'partner_id', ...COUNTERS],
  (insert) =>
    insert.onConflict((oc) =>
      oc.columns(['brand_id', 'day', 'offer_id', 'partner_id']).doUpdateSet(increments('rollups_offer_partner')),
    ),
);
const upsertOffer = preparedInsert<Record<string, unknown>, unknown, 'rollups_offer'>(
  'rollups_offer',
  ['brand_id', 'day', 'offer_id', ...COUNTERS],
  (insert) =>
    insert.onConflict((oc) => oc.columns(['brand_id', 'day', 'offer_id']).doUpdateSet(increments('rollups_offer'))),
);

export async function addToRollups(trx: Trx, key: RollupKey, delta: RollupDelta): Promise<void> {
  const row = {
    brand_id: key.brandId,
    day: key.day,
    offer_id: key.offerId,
    partner_id: key.partnerId,
    clicks: delta.clicks ?? 0,
    pending: delta.pending ?? 0,
    approved: delta.approved ?? 0,
    rejected: delta.rejected ?? 0,
    revenue_cents: delta.revenueCents ?? 0,
    payout_cents: delta.payoutCents ?? 0,
  };
  await upsertOfferPartner.execute(trx, row);
  await upsertOffer.execute(trx, row);
}
