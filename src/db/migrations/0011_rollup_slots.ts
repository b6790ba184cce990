import { type Kysely, PostgresAdapter, sql } from 'kysely';

const TABLES = [
  ['rollups_offer_partner', ['brand_id', 'day', 'offer_id', 'partner_id']],
  ['rollups_offer', ['brand_id', 'day', 'offer_id']],
] as const;
const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'];

/**
 * A rollup's day × offer (× partner) may be spread over several rows, told apart by `slot`
 * and summed when read (reports already SUM). On PostgreSQL every click and conversion of a
 * day otherwise updates the same row, and concurrent transactions queue on its lock until
 * each one's commit is flushed: each transaction writes the slot of its own choosing
 * (reports/rollups.ts). Existing rows become slot 0. SQLite (one writer) keeps using slot 0.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const [table, keys] of TABLES) {
    if (postgres) {
      await sql`alter table ${sql.table(table)} add column slot integer not null default 0`.execute(db);
      await sql`alter table ${sql.table(table)} drop constraint ${sql.ref(`${table}_pk`)}`.execute(db);
      await sql`alter table ${sql.table(table)} add constraint ${sql.ref(`${table}_pk`)} primary key (${sql.join(
        [...keys, 'slot'].map((c) => sql.ref(c)),
      )})`.execute(db);
      continue;
    }
    // SQLite cannot change a primary key in place: the table is rebuilt (in the migration's transaction).
    const next = `${table}_slots`;
    let builder = db.schema.createTable(next);
    for (const key of keys) builder = builder.addColumn(key, 'text', (c) => c.notNull());
    builder = builder.addColumn('slot', 'integer', (c) => c.notNull().defaultTo(0));
    for (const counter of COUNTERS) builder = builder.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
    await builder.addPrimaryKeyConstraint(`${table}_pk`, [...keys, 'slot'] as never[]).execute();
    const columns = [...keys, ...COUNTERS].map((c) => sql.ref(c));
    await sql`insert into ${sql.table(next)} (${sql.join(columns)}) select ${sql.join(columns)} from ${sql.table(table)}`.execute(
      db,
    );
    await db.schema.dropTable(table).execute();
    await db.schema.alterTable(next).renameTo(table).execute();
  }
}
