import { type Kysely, sql } from 'kysely';

/**
 * Idempotency keys belong to the brand, not to the API key that sent them (http/idempotency.ts):
 * README promises Stripe's semantics, and Stripe keeps keys per account, so a retry through
 * the brand's other key (a key rotation) must replay, not do the work again.
 *
 * The keys of the last 24 hours are kept, so a retry across the upgrade still replays: each
 * row scoped to an API key moves to that key's brand. Its answer stays sealed under the API
 * key's id (the sealing key is derived from the Idempotency-Key, which is not stored, so it
 * cannot be sealed again): `sealed_under` keeps that id, and a replay opens the answer with it.
 * When two keys of one brand stored the same Idempotency-Key (the work done twice), the
 * earlier is kept: it is what a retry replays from now on. Rows scoped otherwise (`ip:…`) are
 * left as they are.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('sealed_under', 'text').execute();
  await sql`
    delete from idempotency_keys
    where exists (
      select 1
      from api_keys mine
      join api_keys theirs on theirs.brand_id = mine.brand_id
      join idempotency_keys other on other.scope = theirs.id
      where mine.id = idempotency_keys.scope
        and other.key = idempotency_keys.key
        and (other.created_at < idempotency_keys.created_at
          or (other.created_at = idempotency_keys.created_at and other.scope < idempotency_keys.scope))
    )`.execute(db);
  await sql`
    update idempotency_keys
    set sealed_under = scope,
        scope = 'brand:' || (select brand_id from api_keys where api_keys.id = idempotency_keys.scope)
    where scope in (select id from api_keys)`.execute(db);
}
