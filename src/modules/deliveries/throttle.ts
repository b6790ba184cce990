/**
 * Per-target rate limits (a webhook subscription's `rateLimitPerSecond`), shared by every
 * worker process: the next free send slot of each throttled target is a row of
 * `delivery_throttles`, advanced in the claim's transaction. A claim takes only the
 * deliveries that have a slot within SLOT_HORIZON_MS and tells the dispatcher each one's slot;
 * the dispatcher holds a delivery until then (no attempt, no global slot used). A slot
 * reserved for a row another worker claimed first is wasted, never reused: the limit errs on
 * the slow side. Only throttled targets pay these statements.
 */
import { PostgresAdapter } from 'kysely';
import type { Trx } from '../../db/types.js';

/** How far ahead a claim reserves slots: short, so a rate change or a stopped worker costs little. */
export const SLOT_HORIZON_MS = 1000;

/** Time between two sends at `perSecond`: whole milliseconds, rounded up, so rounding never exceeds the rate. */
export function slotInterval(perSecond: number): number {
  return Math.ceil(1000 / perSecond);
}

/** Reserves up to `wanted` send slots for `key`; returns their times (epoch ms), earliest first. */
export async function reserveSendSlots(
  trx: Trx,
  key: string,
  perSecond: number,
  wanted: number,
  now: number,
): Promise<number[]> {
  const interval = slotInterval(perSecond);
  await trx
    .insertInto('delivery_throttles')
    .values({ target_key: key, next_slot_at: now })
    .onConflict((oc) => oc.column('target_key').doNothing())
    .execute();
  let read = trx.selectFrom('delivery_throttles').select('next_slot_at').where('target_key', '=', key);
  // PostgreSQL: workers claiming for the same target at once queue on the row, so no two get
  // the same slot (SQLite's write transaction already excludes every other writer).
  if (trx.getExecutor().adapter instanceof PostgresAdapter) read = read.forUpdate();
  const row = await read.executeTakeFirstOrThrow();
  const first = Math.max(Number(row.next_slot_at), now);
  const fit = first > now + SLOT_HORIZON_MS ? 0 : Math.floor((now + SLOT_HORIZON_MS - first) / interval) + 1;
  const count = Math.min(wanted, fit);
  if (count === 0) return [];
  const slots = Array.from({ length: count }, (_, i) => first + i * interval);
  await trx
    .updateTable('delivery_throttles')
    .set({ next_slot_at: first + count * interval })
    .where('target_key', '=', key)
    .execute();
  return slots;
}
