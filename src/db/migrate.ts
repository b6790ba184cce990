import { type Kysely, Migrator, sql } from 'kysely';
import { CommandError, EXIT_FAILURE } from '../cliErrors.js';
import { ConfigError } from '../config.js';
import type { Database } from './database.js';
import { migrationProvider } from './migrations/index.js';
import type { Schema } from './schema.js';

export interface MigrationReport {
  applied: string[];
}

async function migratorOf(db: Database): Promise<Migrator> {
  return new Migrator({
    db: db.admin,
    provider: migrationProvider,
    ...(db.dialect === 'postgres' ? { migrationTableSchema: await migrationSchema(db.admin) } : {}),
  });
}

/** Applies every pending migration; safe to run from several processes at once. */
export async function migrateToLatest(db: Database): Promise<MigrationReport> {
  const { error, results } = await (await migratorOf(db)).migrateToLatest();
  if (error) throw newerDatabase(error) ?? (error instanceof Error ? error : new Error(String(error)));
  // Migrations commit outside the group committer, which is what syncs SQLite's commits.
  await db.syncToDisk();
  return {
    applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
  };
}

/**
 * PostgreSQL: the schema the tables are created in — the first existing one of the
 * connection's `search_path` (`public` unless DATABASE_URL's `options` set another) — which
 * is where the migration records belong too, so two deployments in two schemas of one
 * database each keep their own. Earlier builds always kept the records in `public`; a schema
 * they migrated (its tables there, its records not) gets a copy of `public`'s records first.
 */
async function migrationSchema(db: Kysely<Schema>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) {
    throw new ConfigError(
      'DATABASE_URL',
      'its search_path names no schema that exists: create the schema first, or leave search_path out to use public',
    );
  }
  if (schema !== 'public') await adoptRecordsFromPublic(db, schema);
  return schema;
}

async function adoptRecordsFromPublic(db: Kysely<Schema>, schema: string): Promise<void> {
  const exists = (table: string) =>
    sql<{ found: string | null }>`select to_regclass(${table}) as found`.execute(db).then((r) => r.rows[0]?.found);
  const own = `${quoted(schema)}.kysely_migration`;
  if ((await exists(own)) || !(await exists(`${quoted(schema)}.brands`))) return;
  if (!(await exists('public.kysely_migration'))) return;
  await db.transaction().execute(async (trx) => {
    await sql`create table if not exists ${sql.raw(own)} (like public.kysely_migration including all)`.execute(trx);
    await sql`insert into ${sql.raw(own)} select * from public.kysely_migration on conflict do nothing`.execute(trx);
  });
}

function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

/** Kysely's words for a database that ran a migration this version does not have. */
const UNKNOWN_MIGRATION = /^corrupted migrations: previously executed migration (\S+) is missing$/;

/**
 * An older version started on a database a newer one migrated (a rollback after an upgrade):
 * nothing is damaged and refusing is right, but Kysely calls it "corrupted" and it reached
 * the operator as an unexpected error. Migrations are forward-only, so the way back is the
 * newer version or a backup.
 */
function newerDatabase(error: unknown): CommandError | null {
  const unknown = error instanceof Error ? UNKNOWN_MIGRATION.exec(error.message)?.[1] : undefined;
  if (unknown === undefined) return null;
  return new CommandError(
    'database_too_new',
    `the database was migrated by a newer version of Affitrack (it has run ${unknown}, which this version does not have): ` +
      'run that version, or restore a backup taken before the upgrade',
    EXIT_FAILURE,
  );
}

/** The migrations of this version the database has not run yet (SQLite: it creates nothing to find out). */
export async function pendingMigrations(db: Database): Promise<string[]> {
  const migrations = await (await migratorOf(db)).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
