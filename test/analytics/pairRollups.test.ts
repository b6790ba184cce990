/**
 * The pair rollups' migration: facts folded before it existed are paired by the migration
 * itself (the fold pairs only the facts it folds from then on), so two-attribute reports
 * count the history too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { createTestDatabase, migrateTestDatabase, migrateTestDatabaseTo, testedDialects } from '../helpers.js';

const fact = (country: string | null, deviceType: string, clicks: number, folded: number) => ({
  brand_id: 'brd_pairs',
  day: '2026-11-20',
  hour: '10',
  offer_id: 'off_a',
  partner_id: 'prt_a',
  currency: 'EUR',
  country,
  device_type: deviceType,
  clicks,
  pending: 0,
  approved: 0,
  rejected: 0,
  revenue_cents: 10 * clicks,
  payout_cents: 0,
  folded,
});

for (const dialect of testedDialects()) {
  describe(`pair rollups migration (${dialect})`, () => {
    it('pairs the facts folded before it, and leaves the unfolded ones to the fold', async () => {
      const database = await createTestDatabase(dialect);
      try {
        const names = Object.keys(await migrationProvider.getMigrations()).sort();
        const before = names[names.findIndex((n) => n.endsWith('_pair_rollups')) - 1] as string;
        await migrateTestDatabaseTo(database, before);
        await database.db.admin
          .insertInto('analytics_facts')
          .values([
            fact('DE', 'mobile', 2, 1),
            fact('DE', 'mobile', 3, 1),
            fact(null, 'desktop', 4, 1),
            fact('DE', 'mobile', 100, 0),
          ])
          .execute();

        await migrateTestDatabase(database.db);
        const rows = await database.db.read
          .selectFrom('analytics_pair_rollups')
          .select(['span', 'day', 'first', 'second', 'currency', 'clicks', 'revenue_cents'])
          .where('brand_id', '=', 'brd_pairs')
          .where('pair', '=', 'country,deviceType')
          .orderBy('span')
          .orderBy('first')
          .execute();
        // The day's rows, and (migration 0027) the same sums as its week's, keyed by the Monday.
        assert.deepEqual(
          rows.map((r) => ({ ...r, clicks: Number(r.clicks), revenue_cents: Number(r.revenue_cents) })),
          [
            { span: 1, day: '2026-11-20', first: '', second: 'desktop', currency: 'EUR', clicks: 4, revenue_cents: 40 },
            {
              span: 1,
              day: '2026-11-20',
              first: 'DE',
              second: 'mobile',
              currency: 'EUR',
              clicks: 5,
              revenue_cents: 50,
            },
            { span: 7, day: '2026-11-16', first: '', second: 'desktop', currency: 'EUR', clicks: 4, revenue_cents: 40 },
            {
              span: 7,
              day: '2026-11-16',
              first: 'DE',
              second: 'mobile',
              currency: 'EUR',
              clicks: 5,
              revenue_cents: 50,
            },
          ],
        );
      } finally {
        await database.db.close();
        await database.drop();
      }
    });
  });
}
