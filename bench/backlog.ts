/**
 * Issue #20: the shared perf harness (../shared/perf) with the retention sweep running. The
 * harness starts the service afresh for every section, so the backlog is made once and put
 * under each start:
 *
 *   tsx bench/backlog.ts <dir>
 *
 * seeds the retention bench's rows (1,000,000 clicks, 200,000 events with a finished delivery
 * and an attempt each, all 170–200 days old, so past every default window) into a migrated
 * database and writes a project directory <dir>/project that the harness can be pointed at:
 *
 *   node ../shared/perf/run.mjs --project <dir>/project --json /tmp/p.json
 *
 * Its `npm start` copies the seeded SQLite file into the DATA_DIR the harness gives it, then
 * runs this checkout's built service, whose worker starts sweeping at once. With DATABASE_URL
 * set the rows go into that PostgreSQL database instead (every section then shares them, and
 * the sweep goes on from where the last section's left it); the project then starts the
 * service unchanged. Run `npm run build` first.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { Database } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { ROOT } from './lib.js';
import { loadRows } from './retention.js';

const DAY_MS = 86_400_000;

const out = process.argv[2];
if (!out) {
  console.error('usage: tsx bench/backlog.ts <dir>');
  process.exit(2);
}
const dir = path.resolve(out);
const seedDir = path.join(dir, 'seed');
const databaseUrl = process.env.DATABASE_URL || null;
mkdirSync(seedDir, { recursive: true });

const db = new Database({ databaseUrl, dataDir: seedDir });
try {
  await migrateToLatest(db);
  const started = performance.now();
  await loadRows(db, Date.now() - 200 * DAY_MS);
  if (db.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db.admin);
  console.log(`backlog loaded in ${((performance.now() - started) / 1000).toFixed(1)} s (${db.dialect})`);
} finally {
  await db.close();
}

const project = path.join(dir, 'project');
mkdirSync(project, { recursive: true });
for (const name of ['dist', 'node_modules']) symlinkSync(path.join(ROOT, name), path.join(project, name));
const seeded = path.join(seedDir, 'affitrack.db');
const start = databaseUrl
  ? 'exec node dist/cli.js serve'
  : `cp ${JSON.stringify(seeded)} "$DATA_DIR/affitrack.db" && exec node dist/cli.js serve`;
writeFileSync(
  path.join(project, 'package.json'),
  `${JSON.stringify({ name: 'affitrack', private: true, type: 'module', bin: { affitrack: 'dist/cli.js' }, scripts: { start } }, null, 2)}\n`,
);
console.log(`project for the harness: ${project}`);
