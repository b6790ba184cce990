import { type Kysely, sql } from 'kysely';

/**
 * Reports add the facts not folded yet for one brand and day range. With only a partial
 * index on `id`, SQLite's planner (no statistics) took the full (brand_id, day) index and
 * read every fact of the range — 1.2M rows, seconds — to find the few unfolded ones. A partial
 * index on (brand_id, day) holds only the unfolded tail, so that part reads just the tail; the
 * fold job's claim (`where folded = 0 order by id`) reads the same small index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('analytics_facts_unfolded_idx').execute();
  await db.schema
    .createIndex('analytics_facts_unfolded_idx')
    .on('analytics_facts')
    .columns(['brand_id', 'day'])
    .where(sql.ref('folded'), '=', 0)
    .execute();
}
