import type { Kysely } from 'kysely';

/**
 * Brand time zones are now stored by their current IANA names (`Asia/Kolkata`, `Europe/Kyiv`),
 * where 0036 stored Intl's spelling, which for renamed zones is the old name Node 20's ICU
 * still gives them (`Asia/Calcutta`, `Europe/Kiev`). The same zone either way — Intl and
 * PostgreSQL read both names — so no day or hour already recorded changes. The brand's
 * `timezone` is the only column holding a zone.
 *
 * The Intl call and the table of renames (src/modules/validation.ts says where it comes from)
 * are repeated rather than imported: a migration must not change with the code it once ran
 * with. A name Intl does not know is left as is.
 */
const IANA_NAMES = new Map([
  ['Africa/Asmera', 'Africa/Asmara'],
  ['America/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
  ['America/Catamarca', 'America/Argentina/Catamarca'],
  ['America/Coral_Harbour', 'America/Atikokan'],
  ['America/Cordoba', 'America/Argentina/Cordoba'],
  ['America/Godthab', 'America/Nuuk'],
  ['America/Indianapolis', 'America/Indiana/Indianapolis'],
  ['America/Jujuy', 'America/Argentina/Jujuy'],
  ['America/Louisville', 'America/Kentucky/Louisville'],
  ['America/Mendoza', 'America/Argentina/Mendoza'],
  ['Asia/Calcutta', 'Asia/Kolkata'],
  ['Asia/Katmandu', 'Asia/Kathmandu'],
  ['Asia/Rangoon', 'Asia/Yangon'],
  ['Asia/Saigon', 'Asia/Ho_Chi_Minh'],
  ['Atlantic/Faeroe', 'Atlantic/Faroe'],
  ['Europe/Kiev', 'Europe/Kyiv'],
  ['Pacific/Enderbury', 'Pacific/Kanton'],
  ['Pacific/Ponape', 'Pacific/Pohnpei'],
  ['Pacific/Truk', 'Pacific/Chuuk'],
]);

export async function up(db: Kysely<unknown>): Promise<void> {
  const brands = db as Kysely<{ brands: { id: string; timezone: string } }>;
  const rows = await brands.selectFrom('brands').select(['id', 'timezone']).execute();
  for (const { id, timezone } of rows) {
    let intl: string;
    try {
      intl = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
    } catch {
      continue;
    }
    const current = IANA_NAMES.get(intl) ?? intl;
    if (current !== timezone) {
      await brands.updateTable('brands').set({ timezone: current }).where('id', '=', id).execute();
    }
  }
}
