import { Migrator } from 'kysely';
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
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return {
    applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
  };
}

/** The migrations of this version the database has not run yet (it creates nothing to find out). */
export async function pendingMigrations(db: Database): Promise<string[]> {
  const migrations = await migratorOf(db).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
