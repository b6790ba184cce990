import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';

/**
 * One row naming this deployment: its SQLite file, or its database (or schema of a shared
 * PostgreSQL database). What deployments may share besides — one Redis for their rate limits —
 * is kept apart by it, while every process of one deployment reads the same id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('deployment')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .execute();
  await (db as Kysely<{ deployment: { id: string } }>).insertInto('deployment').values({ id: randomUUID() }).execute();
}
