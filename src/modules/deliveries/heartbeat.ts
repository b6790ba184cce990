/**
 * Worker heartbeats. Each running dispatcher writes `delivery_workers.heartbeat_at` every
 * HEARTBEAT_MS (and whenever it claims). A lease whose owner has not beaten for DEAD_AFTER_MS
 * is over, whatever its expiry says: a worker killed with SIGKILL leaves leases that run for
 * the time-out plus a margin (tens of seconds), and this is what lets a restarted or another
 * worker send them within seconds. A slow worker — an attempt waiting on a receiver for the
 * whole time-out — still beats (the timer does not wait on attempts), so it keeps its leases.
 */

import { prepared } from '../../db/prepared.js';
import type { Trx } from '../../db/types.js';

/** How often a running dispatcher proves it is alive. */
export const HEARTBEAT_MS = 1000;
/**
 * Silence after which a worker counts as dead: three missed beats, so an event loop stalled
 * for a second or two under load is not mistaken for a crash (its leases would be taken over
 * and it would have to hand back what waited in its lanes: avoidable churn).
 */
export const DEAD_AFTER_MS = 3 * HEARTBEAT_MS;
/**
 * Silence after which a dispatcher stops trusting its own leases (a stalled process: a long
 * GC pause, a frozen container, CPU throttling): half a beat before another worker may take
 * them over, for clocks that differ a little between processes and for the moment between
 * the check and the send.
 */
export const LEASES_IN_DOUBT_AFTER_MS = DEAD_AFTER_MS - HEARTBEAT_MS / 2;

const beat = prepared(2, (q, owner: string, now: number) =>
  q
    .insertInto('delivery_workers')
    .values({ id: owner, heartbeat_at: now, started_at: now })
    .onConflict((oc) => oc.column('id').doUpdateSet({ heartbeat_at: now })),
);

export async function recordHeartbeat(trx: Trx, owner: string, now: number): Promise<void> {
  await beat.execute(trx, owner, now);
}

/** A stopping worker says so, so its leases (if any are left) are taken over at once. */
export async function removeWorker(trx: Trx, owner: string): Promise<void> {
  await trx.deleteFrom('delivery_workers').where('id', '=', owner).execute();
}

/** Workers silent this long are forgotten: their leases ended long ago. */
const FORGET_AFTER_MS = 3_600_000;

export async function forgetDeadWorkers(trx: Trx, now: number): Promise<void> {
  await trx
    .deleteFrom('delivery_workers')
    .where('heartbeat_at', '<', now - FORGET_AFTER_MS)
    .execute();
}
