import { type Kysely, sql } from 'kysely';

/**
 * `payouts.paid_method` and `paid_account`: the partner's payout details when the payout was
 * marked paid. A paid payout showed the partner's current details, which the partner can
 * change at any time, so the brand's record of a payment named an account it was never made
 * to. Payouts paid before it keep the details they showed until now: the current ones.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('payouts').addColumn('paid_method', 'text').execute();
  await db.schema.alterTable('payouts').addColumn('paid_account', 'text').execute();
  for (const column of ['method', 'account']) {
    const from = sql.ref(`a.payout_${column}`);
    await sql`
      update payouts set ${sql.ref(`paid_${column}`)} =
        (select ${from} from partner_accounts a where a.partner_id = payouts.partner_id)
      where status = 'paid'`.execute(db);
  }
}
