import { type Kysely, sql } from 'kysely';

/**
 * `payouts.paid_method` and `paid_account` now hold the partner's payout details when the
 * payout was created (a payout run), not when it was marked paid: the brand exports and pays
 * a created payout to the details it shows, and a partner changing them between the export
 * and "mark paid" made the paid record name an account the money never went to.
 *
 * Payouts not yet paid showed the partner's current details until now: they keep showing
 * them, now as their snapshot. Cancelled ones too, so that the details a cancelled payout
 * showed do not vanish. Paid payouts keep what 0033 (or mark-paid) stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['method', 'account']) {
    const from = sql.ref(`a.payout_${column}`);
    await sql`
      update payouts set ${sql.ref(`paid_${column}`)} =
        (select ${from} from partner_accounts a where a.partner_id = payouts.partner_id)
      where status in ('created', 'cancelled')`.execute(db);
  }
}
