/**
 * Maintains the report rollups in the caller's transaction: every conversion change and
 * every click adds its delta to the day × offer × partner row and to the coarser day ×
 * offer row. Reports then read a handful of rows instead of scanning conversions.
 *
 * Two things keep these shared rows from serialising the hot paths:
 * - On SQLite the deltas of a group-commit batch are summed in memory and written once per
 *   row before the batch commits (a unit that rolls back adds nothing).
 * - On PostgreSQL a day's counts are spread over ROLLUP_SLOTS rows (`slot`, summed when
 *   read): each transaction writes one slot of its own, so concurrent clicks rarely wait on
 *   each other's row lock, which is held until the commit is flushed to disk.
 * Either way every delta is in the same transaction as the change it counts: exact.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { Trx } from '../../db/database.js';
import { deferToBatchEnd } from '../../db/groupCommit.js';
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

/** Rows a day × offer (× partner) is spread over on PostgreSQL. */
export const ROLLUP_SLOTS = 16;

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;
type Counter = (typeof COUNTERS)[number];

interface RollupRow extends Record<Counter, number> {
  brand_id: string;
  day: string;
  offer_id: string;
  partner_id: string;
  slot: number;
}

/** `table.counter + excluded.counter` for every counter; table names are constants of this module. */
function increments(table: 'rollups_offer_partner' | 'rollups_offer') {
  return Object.fromEntries(COUNTERS.map((c) => [c, sql`${sql.ref(`${table}.${c}`)} + ${sql.ref(`excluded.${c}`)}`]));
}

const upsertOfferPartner = preparedInsert<RollupRow>(
  'rollups_offer_partner',
  ['brand_id', 'day', 'offer_id', 'partner_id', 'slot', ...COUNTERS],
  (insert) =>
    insert.onConflict((oc) =>
      oc
        .columns(['brand_id', 'day', 'offer_id', 'partner_id', 'slot'] as never)
        .doUpdateSet(increments('rollups_offer_partner')),
    ),
);
const upsertOffer = preparedInsert<RollupRow>(
  'rollups_offer',
  ['brand_id', 'day', 'offer_id', 'slot', ...COUNTERS],
  (insert) =>
    insert.onConflict((oc) =>
      oc.columns(['brand_id', 'day', 'offer_id', 'slot'] as never).doUpdateSet(increments('rollups_offer')),
    ),
);

/** The slot each PostgreSQL transaction writes (one per transaction, so its own writes share rows). */
const slots = new WeakMap<Trx, number>();

function slotOf(trx: Trx): number {
  let slot = slots.get(trx);
  if (slot === undefined) {
    slot = trx.getExecutor().adapter instanceof PostgresAdapter ? Math.floor(Math.random() * ROLLUP_SLOTS) : 0;
    slots.set(trx, slot);
  }
  return slot;
}

/** Deltas of a SQLite batch, per day × offer × partner, waiting for the batch's end. */
const pending = new WeakMap<Trx, Map<string, RollupRow>>();
const BATCH_KEY = {};

function addInto(into: RollupRow, from: RollupRow): void {
  for (const c of COUNTERS) into[c] += from[c];
}

async function writeRows(trx: Trx, rows: Iterable<RollupRow>): Promise<void> {
  const byOffer = new Map<string, RollupRow>();
  for (const row of rows) {
    await upsertOfferPartner.execute(trx, row);
    const key = `${row.brand_id}\u0000${row.day}\u0000${row.offer_id}\u0000${row.slot}`;
    const sum = byOffer.get(key);
    if (sum) addInto(sum, row);
    else byOffer.set(key, { ...row });
  }
  for (const row of byOffer.values()) await upsertOffer.execute(trx, row);
}

async function writePending(trx: Trx): Promise<void> {
  const rows = pending.get(trx);
  if (!rows) return;
  pending.delete(trx);
  await writeRows(trx, rows.values());
}

export async function addToRollups(trx: Trx, key: RollupKey, delta: RollupDelta): Promise<void> {
  const row: RollupRow = {
    brand_id: key.brandId,
    day: key.day,
    offer_id: key.offerId,
    partner_id: key.partnerId,
    slot: slotOf(trx),
    clicks: delta.clicks ?? 0,
    pending: delta.pending ?? 0,
    approved: delta.approved ?? 0,
    rejected: delta.rejected ?? 0,
    revenue_cents: delta.revenueCents ?? 0,
    payout_cents: delta.payoutCents ?? 0,
  };
  const merge = () => {
    let rows = pending.get(trx);
    if (!rows) {
      rows = new Map();
      pending.set(trx, rows);
    }
    const id = `${row.brand_id}\u0000${row.day}\u0000${row.offer_id}\u0000${row.partner_id}`;
    const sum = rows.get(id);
    if (sum) addInto(sum, row);
    else rows.set(id, row);
  };
  if (deferToBatchEnd(trx, BATCH_KEY, merge, writePending)) return;
  await writeRows(trx, [row]);
}
