/**
 * Micro-benchmark of `prepared()` (src/db/prepared.ts), the hot path of auth, tracking and
 * ingest: one precompiled point lookup and one insert, run many times on SQLite and, with
 * DATABASE_URL, PostgreSQL, against the same query built and compiled by Kysely each time.
 * `npx tsx bench/preparedQuery.ts` — prints µs per call (median of 5 rounds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/clock.js';
import { Database } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { prepared, preparedInsert } from '../src/db/prepared.js';
import type { EventTable } from '../src/db/schema.js';
import { createBrandWithFirstKey } from '../src/modules/brands/service.js';

const LOOKUPS = 20_000;
const INSERTS = 10_000;
const ROUNDS = 5;

const brandById = prepared(1, (q, id: string) => q.selectFrom('brands').selectAll().where('id', '=', id));
const eventInsert = preparedInsert<Omit<EventTable, 'test'>>('events', [
  'id',
  'brand_id',
  'type',
  'payload',
  'created_at',
]);

async function perCall(calls: number, run: (i: number) => Promise<unknown>): Promise<number> {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await run(r * calls + i);
    rounds.push(Number(process.hrtime.bigint() - started) / 1000 / calls);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] as number;
}

async function measure(label: string, db: Database): Promise<void> {
  await migrateToLatest(db);
  const { brand } = await db.transact((trx) => createBrandWithFirstKey(trx, systemClock, { name: 'Bench' }));
  const lookup = await perCall(LOOKUPS, () => brandById.first(db.read, brand.id));
  const built = await perCall(LOOKUPS, () =>
    db.read.selectFrom('brands').selectAll().where('id', '=', brand.id).executeTakeFirst(),
  );
  // Inserts inside one transaction: the statement's cost, not a commit's fsync.
  const insert = await db.transact((trx) =>
    perCall(INSERTS, (i) =>
      eventInsert.execute(trx, {
        id: `evt_${label}_${i}`,
        brand_id: brand.id,
        type: 'x',
        payload: '{}',
        created_at: i,
      }),
    ),
  );
  console.log(
    `${label}: lookup prepared ${lookup.toFixed(1)} µs, built each time ${built.toFixed(1)} µs; ` +
      `insert prepared ${insert.toFixed(1)} µs`,
  );
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-bench-prepared-'));
try {
  const sqlite = new Database({ databaseUrl: null, dataDir });
  await measure('sqlite', sqlite);
  await sqlite.close();
  if (process.env.DATABASE_URL) {
    const postgres = new Database({ databaseUrl: process.env.DATABASE_URL, dataDir });
    await measure('postgres', postgres);
    await postgres.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
