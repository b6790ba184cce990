import { type Kysely, sql } from 'kysely';

/**
 * The hold job (conversions/service.ts, approveExpiredHolds) reads pending conversions whose
 * hold time has passed, oldest first; nothing else reads conversions_hold_idx (status,
 * hold_until), yet every conversion took an entry in it — approved ones and pending ones
 * without a hold included. Partial now, it holds only the conversions waiting out a hold:
 * the others (most of them) write one b-tree less. The job's query repeats the status
 * literally so SQLite can match the index; its `hold_until <= ?` implies the IS NOT NULL.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('conversions_hold_idx').execute();
  await db.schema
    .createIndex('conversions_held_idx')
    .on('conversions')
    .column('hold_until')
    .where((eb) => eb.and([eb(sql.ref('status'), '=', 'pending'), eb(sql.ref('hold_until'), 'is not', null)]))
    .execute();
}
