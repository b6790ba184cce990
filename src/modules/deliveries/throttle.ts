/**
 * Per-target rate limits (a webhook subscription's `rateLimitPerSecond`), shared by every
 * worker process: the next free send slot of each throttled target is a row of
 * `delivery_throttles`, advanced in the claim's transaction. A claim takes only the
 * deliveries that have a slot within SLOT_HORIZON_MS and tells the dispatcher each one's slot;
 * the dispatcher holds a delivery until then (no attempt, no global slot used). A slot
 * reserved for a row another worker claimed first is wasted, never reused: the limit errs on
 * the slow side. Only throttled targets pay these statements.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresAdapter } from 'kysely';
import type { AppContext } from '../../context.js';
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

/**
 * Takes the start of a send to `key` for `now` if at least `interval` ms passed since the
 * last send to it started in any process; otherwise returns how long to wait. Slots alone
 * cannot keep the rate: a worker whose event loop or send slots are busy starts some sends
 * after their slot, and another worker's on-time sends then go out together with them. One
 * conditional write decides, so two workers can never both start within an interval
 * (PostgreSQL locks the row for the upsert; SQLite has one writer).
 */
export async function takeSendStart(trx: Trx, key: string, interval: number, now: number): Promise<number> {
  const taken = await trx
    .insertInto('delivery_throttles')
    .values({ target_key: key, next_slot_at: now, last_send_at: now })
    .onConflict((oc) =>
      oc
        .column('target_key')
        .doUpdateSet({ last_send_at: now })
        .where((eb) =>
          eb.or([
            eb('delivery_throttles.last_send_at', 'is', null),
            eb('delivery_throttles.last_send_at', '<=', now - interval),
          ]),
        ),
    )
    .returning('target_key')
    .executeTakeFirst();
  if (taken) return 0;
  const row = await trx
    .selectFrom('delivery_throttles')
    .select('last_send_at')
    .where('target_key', '=', key)
    .executeTakeFirst();
  return Math.max(1, Number(row?.last_send_at ?? now) + interval - now);
}

/**
 * Waits, outside the delivery engine, for a send slot of `key` and its start: for a send that
 * is not a delivery row (a webhook test send), so it is spaced from the engine's sends and
 * from other such sends like any delivery. It reserves one slot (so no claim hands it out
 * again), waits for it, then takes the start as the dispatcher does on PostgreSQL. The wait
 * is short — slots are booked at most SLOT_HORIZON_MS ahead — but bounded by tries, so a
 * clock that does not follow real time (tests) cannot keep it waiting for ever.
 */
export async function waitForSendSlot(ctx: AppContext, key: string, perSecond: number): Promise<void> {
  const interval = slotInterval(perSecond);
  for (let tries = 0; tries < MAX_SLOT_TRIES; tries++) {
    const now = ctx.clock.now();
    const [slot] = await ctx.db.transact((trx) => reserveSendSlots(trx, key, perSecond, 1, now));
    if (slot !== undefined) {
      if (slot > now) await sleep(slot - now);
      break;
    }
    await sleep(interval);
  }
  for (let tries = 0; tries < MAX_SLOT_TRIES; tries++) {
    const wait = await ctx.db.transact((trx) => takeSendStart(trx, key, interval, ctx.clock.now()));
    if (wait === 0) return;
    await sleep(wait);
  }
}

/** Tries of each step of waitForSendSlot: ample for a real clock (each waits about one interval). */
const MAX_SLOT_TRIES = 20;
