import { Migrator } from 'kysely';
import type { Database } from './database.js';
import { migrationProvider } from './migrations/index.js';

export interface MigrationReport {
  applied: string[];
}

/** Applies every pending migration; safe to run from several processes at once. */
export async function migrateToLatest(db: Database): Promise<MigrationReport> {
  const migrator = new Migrator({
    db: db.admin,
    provider: migrationProvider,
    ...(db.dialect === 'postgres' ? { migrationTableSchema: db.schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return {
    applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
  };
}
