import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ManualClock } from '../../src/clock.js';
import { Database } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { bootstrapDefaultBrand } from '../../src/modules/brands/bootstrap.js';
import { createTestDatabase, createTestEnv, migrateTestDatabase, testedDialects } from '../helpers.js';

const run = promisify(execFile);

/**
 * better-sqlite3 waits for locks synchronously, so two connections of one process cannot
 * contend; real processes show the lock working.
 */
async function migrateInTwoProcesses(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-migrate-'));
  try {
    const cli = () =>
      run(process.execPath, ['--import', 'tsx', path.resolve('src/cli.ts'), 'migrate', '--json'], {
        env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' },
      });
    const outputs = await Promise.all([cli(), cli()]);
    const applied = outputs.flatMap(({ stdout }) => JSON.parse(stdout).applied as string[]).sort();
    const all = Object.keys(await migrationProvider.getMigrations()).sort();
    assert.deepEqual(applied, all, 'each migration applied exactly once');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

for (const dialect of testedDialects()) {
  describe(`migrations (${dialect})`, () => {
    it('applies every migration to an empty database, then nothing on a migrated one', async () => {
      const database = await createTestDatabase(dialect);
      try {
        const all = Object.keys(await migrationProvider.getMigrations()).sort();
        assert.deepEqual((await migrateTestDatabase(database.db)).applied, all);
        assert.deepEqual((await migrateTestDatabase(database.db)).applied, []);
        const row = await database.db.read.selectFrom('brands').select('id').executeTakeFirst();
        assert.equal(row, undefined);
      } finally {
        await database.db.close();
        await database.drop();
      }
    });

    it('is safe when two processes migrate the same database at once', async () => {
      if (dialect === 'sqlite') return migrateInTwoProcesses();
      const database = await createTestDatabase(dialect);
      const second = new Database({
        databaseUrl: database.url,
        dataDir: database.dataDir,
        schema: database.schema ?? undefined,
      });
      try {
        const [a, b] = await Promise.all([migrateTestDatabase(database.db), migrateTestDatabase(second)]);
        const all = Object.keys(await migrationProvider.getMigrations()).sort();
        assert.deepEqual([...a.applied, ...b.applied].sort(), all, 'each migration applied exactly once');
      } finally {
        await second.close();
        await database.db.close();
        await database.drop();
      }
    });

    it('creates the Default brand on first start only', async () => {
      const env = await createTestEnv(dialect);
      try {
        // createTestEnv already made a brand, so bootstrap must do nothing.
        assert.equal(await bootstrapDefaultBrand(env.ctx), null);
      } finally {
        await env.close();
      }
      const database = await createTestDatabase(dialect);
      try {
        await migrateTestDatabase(database.db);
        const ctx = { ...env.ctx, db: database.db, clock: new ManualClock() };
        const first = await bootstrapDefaultBrand(ctx);
        assert.equal(first?.brand.name, 'Default');
        assert.match(first?.secret ?? '', /^afk_/);
        assert.equal(await bootstrapDefaultBrand(ctx), null);
      } finally {
        await database.db.close();
        await database.drop();
      }
    });
  });
}
