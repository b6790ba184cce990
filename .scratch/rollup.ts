import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Database } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { rollUpLoadedFacts } from '../src/modules/analytics/fold.js';
const url = process.env.PGURL as string;
const schema = `scratch_${Date.now()}`;
const c = new pg.Client({ connectionString: url }); await c.connect(); await c.query(`create schema ${schema}`);
const db = new Database({ databaseUrl: url, dataDir: mkdtempSync(path.join(tmpdir(), 'reports-scratch-')), schema });
try {
  await migrateToLatest(db);
  await db.admin.insertInto('analytics_facts').values([{ brand_id: 'b', day: '2026-11-20', hour: '01', offer_id: 'o', partner_id: 'p', currency: 'EUR', country: 'DE', clicks: 1, pending: 0, approved: 0, rejected: 0, revenue_cents: 0, payout_cents: 0 }]).execute();
  await db.admin.transaction().execute((trx) => rollUpLoadedFacts(trx as any, 'b'));
  console.log(await db.read.selectFrom('analytics_rollups').select((eb) => eb.fn.countAll().as('n')).execute(), await db.read.selectFrom('analytics_pair_rollups').select((eb) => eb.fn.countAll().as('n')).execute());
} finally { await db.close(); await c.query(`drop schema ${schema} cascade`); await c.end(); }
