import { Migrator } from 'kysely';
import { CommandError, EXIT_FAILURE } from '../cliErrors.js';
import type { Database } from './database.js';
import { migrationProvider } from './migrations/index.js';

export interface MigrationReport {
  applied: string[];
}

function migratorOf(db: Database): Migrator {
  return new Migrator({
    db: db.admin,
    provider: migrationProvider,
    ...(db.dialect === 'postgres' ? { migrationTableSchema: db.schema } : {}),
  });
}

/** Applies every pending migration; safe to run from several processes at once. */
export async function migrateToLatest(db: Database): Promise<MigrationReport> {
  const { error, results } = await migratorOf(db).migrateToLatest();
  if (error) throw newerDatabase(error) ?? (error instanceof Error ? error : new Error(String(error)));
  return {
    applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
  };
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

/** The migrations of this version the database has not run yet (it creates nothing to find out). */
export async function pendingMigrations(db: Database): Promise<string[]> {
  const migrations = await migratorOf(db).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
