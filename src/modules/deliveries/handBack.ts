/**
 * Handing leases back: deliveries a dispatcher had leased but not started sending are made
 * claimable again at once, by any worker (itself included), instead of waiting out their
 * lease. Used when a dispatcher stops, and when it finds that it stalled long enough for its
 * leases to be in doubt (leases.ts). Only rows it still holds are touched: one another
 * worker has taken over, or already finished, stays as that worker left it.
 */
import type { Trx } from '../../db/types.js';

export async function handBackLeases(trx: Trx, owner: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      lease_until: null,
      lease_owner: null,
      // The lease counted a send (claims.ts, fanout.ts) that never happened.
      unrecorded_sends: eb('unrecorded_sends', '-', 1),
    }))
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .execute();
}
