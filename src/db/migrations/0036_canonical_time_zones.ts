import type { Kysely } from 'kysely';

/**
 * Brand time zones are now stored as Intl spells them (`Europe/Berlin`, not the
 * `europe/berlin` a client typed): brands saved before keep their spelling until rewritten
 * here. The same zone either way — Intl and PostgreSQL read names in any case — so no day or
 * hour already recorded changes. The Intl call is repeated rather than imported: a migration
 * must not change with the code it once ran with. A name Intl no longer knows is left as is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const brands = db as Kysely<{ brands: { id: string; timezone: string } }>;
  const rows = await brands.selectFrom('brands').select(['id', 'timezone']).execute();
  for (const { id, timezone } of rows) {
    let canonical: string;
    try {
      canonical = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
    } catch {
      continue;
    }
    if (canonical !== timezone) {
      await brands.updateTable('brands').set({ timezone: canonical }).where('id', '=', id).execute();
    }
  }
}
