import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { createBrandWithFirstKey, type NewBrand } from './service.js';

/** Arbitrary constant naming the advisory lock that serialises first-run bootstrap on PostgreSQL. */
const BOOTSTRAP_LOCK_ID = 7_341_001;

/**
 * On the first start with an empty database, creates the `Default` brand and its first key
 * so a new user can call the API at once. Returns them, or null when brands already exist.
 */
export async function bootstrapDefaultBrand(ctx: AppContext): Promise<NewBrand | null> {
  return ctx.db.transact(async (trx) => {
    if (ctx.db.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK_ID})`.execute(trx);
    const existing = await trx.selectFrom('brands').select('id').limit(1).executeTakeFirst();
    if (existing) return null;
    return createBrandWithFirstKey(trx, ctx.clock, { name: 'Default' });
  });
}
