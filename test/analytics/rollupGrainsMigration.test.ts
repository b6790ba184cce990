/**
 * Migrations 0026 and 0027 rebuild the rollups of facts folded before them (levels 0–2 per
 * attribute, day rows only) into the grains the fold writes now: level 3 summed from level 2,
 * level 2 kept without attribute, week rows at level 0 and for the pairs. The rows they leave
 * must be exactly those the fold writes for the same facts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { rollUpLoadedFacts } from '../../src/modules/analytics/bulkFold.js';
import { createTestDatabase, migrateTestDatabase, migrateTestDatabaseTo, testedDialects } from '../helpers.js';

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'];
const ATTRIBUTES: Array<[string, string]> = [
  ['country', 'country'],
  ['deviceType', 'device_type'],
  ['os', 'os'],
  ['browser', 'browser'],
  ['referrerHost', 'referrer_host'],
  ['sub1', 'sub1'],
  ['sub2', 'sub2'],
  ['sub3', 'sub3'],
  ['sub4', 'sub4'],
  ['sub5', 'sub5'],
  ['hour', 'hour'],
];
const PAIRED = ['country', 'deviceType', 'os', 'browser', 'hour'];

/** Facts over three weeks (2026-11-12 is a Thursday), offers, partners, values and gaps. */
function facts(brandId: string) {
  const rows = [];
  for (let i = 0; i < 60; i++) {
    const day = new Date(Date.UTC(2026, 10, 12 + ((i * 7) % 19))).toISOString().slice(0, 10);
    rows.push({
      brand_id: brandId,
      day,
      hour: String((i * 5) % 24).padStart(2, '0'),
      offer_id: `off_${i % 3}`,
      partner_id: `prt_${i % 4}`,
      currency: i % 5 === 0 ? 'USD' : 'EUR',
      country: ['DE', 'US', null][i % 3] ?? null,
      device_type: ['mobile', 'desktop'][i % 2] ?? null,
      os: i % 4 === 0 ? null : 'iOS',
      browser: ['Chrome', 'Safari', 'Firefox'][i % 3] ?? null,
      referrer_host: i % 2 ? 'news.example' : null,
      sub1: `s${i % 6}`,
      sub2: i % 7 === 0 ? 'x' : null,
      sub3: null,
      sub4: null,
      sub5: i % 11 === 0 ? 'y' : null,
      clicks: i % 4 === 3 ? 0 : 1,
      pending: i % 4 === 3 ? 1 : 0,
      approved: 0,
      rejected: 0,
      revenue_cents: i % 4 === 3 ? 100 + i : 0,
      payout_cents: i % 4 === 3 ? 40 + i : 0,
    });
  }
  return rows;
}

/** What the fold wrote before 0026: levels 0, 1 and 2 per attribute, and the pairs, by day. */
async function foldAsBefore(db: Database['admin'], brandId: string): Promise<void> {
  const sums = sql.join(COUNTERS.map((c) => sql`sum(${sql.ref(c)})`));
  const levels = [
    { level: 0, offer: sql`'*'`, partner: sql`'*'`, keys: [] as string[] },
    { level: 1, offer: sql.ref('offer_id'), partner: sql`'*'`, keys: ['offer_id'] },
    { level: 2, offer: sql.ref('offer_id'), partner: sql.ref('partner_id'), keys: ['offer_id', 'partner_id'] },
  ];
  for (const [dimension, column] of [['', ''], ...ATTRIBUTES] as Array<[string, string]>) {
    const value = dimension === '' ? sql`''` : sql`coalesce(${sql.ref(column)}, '')`;
    for (const { level, offer, partner, keys } of levels) {
      const groupBy = sql.join([
        sql.ref('day'),
        ...keys.map((k) => sql.ref(k)),
        ...(dimension ? [value] : []),
        sql.ref('currency'),
      ]);
      await sql`
        insert into analytics_rollups (brand_id, dimension, level, day, offer_id, partner_id, value, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select ${brandId}, ${dimension}, ${level}, day, ${offer}, ${partner}, ${value}, currency, ${sums}
        from analytics_facts where brand_id = ${brandId} group by ${groupBy}`.execute(db);
    }
  }
  for (let a = 0; a < PAIRED.length; a++) {
    for (let b = a + 1; b < PAIRED.length; b++) {
      const column = (name: string) => ATTRIBUTES.find(([n]) => n === name)?.[1] as string;
      const first = sql`coalesce(${sql.ref(column(PAIRED[a] as string))}, '')`;
      const second = sql`coalesce(${sql.ref(column(PAIRED[b] as string))}, '')`;
      await sql`
        insert into analytics_pair_rollups (brand_id, pair, day, first, second, currency,
          clicks, pending, approved, rejected, revenue_cents, payout_cents)
        select ${brandId}, ${`${PAIRED[a]},${PAIRED[b]}`}, day, ${first}, ${second}, currency, ${sums}
        from analytics_facts where brand_id = ${brandId} group by day, ${first}, ${second}, currency`.execute(db);
    }
  }
  await sql`update analytics_facts set folded = 1 where brand_id = ${brandId}`.execute(db);
}

/** Every rollup and pair rollup row of a brand, as comparable text. */
async function rows(db: Database, brandId: string): Promise<string[]> {
  const counters = (r: Record<string, unknown>) => COUNTERS.map((c) => String(Number(r[c])));
  const rollups = await db.read.selectFrom('analytics_rollups').selectAll().where('brand_id', '=', brandId).execute();
  const pairs = await db.read
    .selectFrom('analytics_pair_rollups')
    .selectAll()
    .where('brand_id', '=', brandId)
    .execute();
  return [
    ...rollups.map((r) =>
      [r.dimension, r.level, r.span, r.day, r.offer_id, r.partner_id, r.value, r.currency, ...counters(r)].join('|'),
    ),
    ...pairs.map((r) => ['pair', r.pair, r.span, r.day, r.first, r.second, r.currency, ...counters(r)].join('|')),
  ].sort();
}

for (const dialect of testedDialects()) {
  describe(`rollup grains migrations (${dialect})`, () => {
    it('rebuild rollups folded before them into the rows the fold writes now', async () => {
      const database = await createTestDatabase(dialect);
      try {
        const names = Object.keys(await migrationProvider.getMigrations()).sort();
        const before = names[names.findIndex((n) => n.endsWith('_rollup_grains')) - 1] as string;
        await migrateTestDatabaseTo(database, before);
        await database.db.admin.insertInto('analytics_facts').values(facts('brd_before')).execute();
        await foldAsBefore(database.db.admin, 'brd_before');

        await migrateTestDatabase(database.db);
        await database.db.admin.insertInto('analytics_facts').values(facts('brd_after')).execute();
        await database.db.transact((trx) => rollUpLoadedFacts(trx, 'brd_after'));

        const migrated = await rows(database.db, 'brd_before');
        assert.ok(
          migrated.some((r) => r.startsWith('sub1|3|1|')),
          'level 3 rows',
        );
        assert.ok(
          migrated.some((r) => r.startsWith('country|0|7|2026-11-16|')),
          'week rows',
        );
        assert.ok(!migrated.some((r) => r.startsWith('country|2|')), 'no level 2 rows with an attribute');
        assert.deepEqual(migrated, await rows(database.db, 'brd_after'));
      } finally {
        await database.db.close();
        await database.drop();
      }
    });
  });
}
