import type { Kysely } from 'kysely';

/** `metadata` (modules/metadata.ts): a JSON object of the client's own string pairs, `{}` by default. */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['offers', 'partners', 'conversions', 'webhook_subscriptions']) {
    await db.schema
      .alterTable(table)
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute();
  }
}
