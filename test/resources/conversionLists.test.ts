import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const CONVERSIONS = '/api/v1/conversions';

/**
 * Six conversions of one brand, recorded at known instants (ids, newest first, at the end):
 *   a  2026-11-20T10:00Z  offer1 partner1  pending   ORD-A
 *   b  2026-11-21T00:00Z  offer1 partner2  approved  ORD-B
 *   c  2026-11-21T12:00Z  offer2 partner1  rejected  ORD-C
 *   d  2026-11-21T23:59:59.999Z offer2 partner2 pending ORD-D
 *   e  2026-11-22T00:00Z  offer1 partner1  pending   (no txn id)
 *   f  2026-11-23T08:00Z  offer2 partner1  pending   ORD-F
 */
for (const dialect of testedDialects()) {
  describe(`GET /api/v1/conversions (${dialect})`, () => {
    let env: TestEnv;
    let key: string;
    const ids: Record<string, string> = {};
    let offer1: string;
    let offer2: string;
    let partner1: string;
    let partner2: string;

    before(async () => {
      env = await createTestEnv(dialect);
      key = (await env.createBrand('Lister')).apiKey;
      const offer = async () =>
        (
          await env.request('POST', '/api/v1/offers', {
            key,
            body: { name: 'O', destinationUrl: 'https://o.example/' },
          })
        ).body.id;
      const partner = async () =>
        (await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } })).body.id;
      offer1 = await offer();
      offer2 = await offer();
      partner1 = await partner();
      partner2 = await partner();
      const plan: Array<[string, string, string, string, string | null, 'approve' | 'reject' | null]> = [
        ['a', '2026-11-20T10:00:00.000Z', offer1, partner1, 'ORD-A', null],
        ['b', '2026-11-21T00:00:00.000Z', offer1, partner2, 'ORD-B', 'approve'],
        ['c', '2026-11-21T12:00:00.000Z', offer2, partner1, 'ORD-C', 'reject'],
        ['d', '2026-11-21T23:59:59.999Z', offer2, partner2, 'ORD-D', null],
        ['e', '2026-11-22T00:00:00.000Z', offer1, partner1, null, null],
        ['f', '2026-11-23T08:00:00.000Z', offer2, partner1, 'ORD-F', null],
      ];
      for (const [name, at, offerId, partnerId, externalTxnId, decision] of plan) {
        env.clock.set(Date.parse(at));
        const body = { offerId, partnerId, ...(externalTxnId ? { externalTxnId } : {}) };
        const res = await env.request('POST', CONVERSIONS, { key, body });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        ids[name] = res.body.id;
        if (decision) {
          const decided = await env.request('POST', `${CONVERSIONS}/${res.body.id}/${decision}`, { key, body: {} });
          assert.equal(decided.status, 200);
        }
      }
    });
    after(() => env.close());

    /** The letters (a…f) of the conversions a query lists, in the order listed. */
    async function listed(query: string): Promise<string> {
      const res = await env.request('GET', `${CONVERSIONS}${query}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const byId = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]));
      assert.equal(res.body.nextCursor, null);
      return res.body.data.map((c: { id: string }) => byId[c.id] ?? '?').join('');
    }

    it('lists every conversion of the brand newest first', async () => {
      assert.equal(await listed(''), 'fedcba');
    });

    it('filters by status', async () => {
      assert.equal(await listed('?status=pending'), 'feda');
      assert.equal(await listed('?status=approved'), 'b');
      assert.equal(await listed('?status=rejected'), 'c');
    });

    it('filters by offerId and by partnerId, alone and together', async () => {
      assert.equal(await listed(`?offerId=${offer1}`), 'eba');
      assert.equal(await listed(`?partnerId=${partner2}`), 'db');
      assert.equal(await listed(`?offerId=${offer2}&partnerId=${partner1}`), 'fc');
    });

    it('filters by externalTxnId', async () => {
      assert.equal(await listed('?externalTxnId=ORD-C'), 'c');
      assert.equal(await listed('?externalTxnId=ORD-NONE'), '');
    });

    it('treats date bounds as whole UTC days, both inclusive', async () => {
      assert.equal(await listed('?from=2026-11-21&to=2026-11-21'), 'dcb');
      assert.equal(await listed('?from=2026-11-22'), 'fe');
      assert.equal(await listed('?to=2026-11-20'), 'a');
    });

    it('treats timestamp bounds as exact instants, both inclusive', async () => {
      assert.equal(await listed('?from=2026-11-21T12:00:00.000Z'), 'fedc');
      assert.equal(await listed('?to=2026-11-21T12:00:00.000Z'), 'cba');
      assert.equal(await listed('?from=2026-11-21T00:00:00.001Z&to=2026-11-21T23:59:59.999Z'), 'dc');
    });

    it('combines filters', async () => {
      assert.equal(await listed(`?status=pending&offerId=${offer2}&from=2026-11-21`), 'fd');
    });

    it('answers 422 for a from or to that is not a date', async () => {
      expectError(await env.request('GET', `${CONVERSIONS}?from=yesterday`, { key }), 422, 'validation_error');
      expectError(await env.request('GET', `${CONVERSIONS}?to=2026-13-45`, { key }), 422, 'validation_error');
      expectError(await env.request('GET', `${CONVERSIONS}?status=paid`, { key }), 422, 'validation_error');
    });

    it('answers 422 for a reversed range, like /reports does', async () => {
      const reversed = '?from=2026-11-30&to=2026-11-01';
      const error = expectError(
        await env.request('GET', `${CONVERSIONS}${reversed}`, { key }),
        422,
        'validation_error',
      );
      assert.deepEqual(error.details, [{ path: 'query.from', message: 'must not be after to' }]);
      expectError(await env.request('GET', `/api/v1/reports${reversed}`, { key }), 422, 'validation_error');
      const instants = '?from=2026-11-21T12:00:00.001Z&to=2026-11-21T12:00:00.000Z';
      expectError(await env.request('GET', `${CONVERSIONS}${instants}`, { key }), 422, 'validation_error');
      assert.equal(
        await listed('?from=2026-11-21T12:00:00.000Z&to=2026-11-21T12:00:00.000Z'),
        'c',
        'an instant is a range',
      );
    });

    it('answers 422 for a date that does not exist on the calendar', async () => {
      expectError(await env.request('GET', `${CONVERSIONS}?from=2026-02-30`, { key }), 422, 'validation_error');
    });

    it('pages with limit and cursor, ending with a null nextCursor', async () => {
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      do {
        const suffix: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
        const res = await env.request('GET', `${CONVERSIONS}?limit=4${suffix}`, { key });
        assert.equal(res.status, 200);
        sizes.push(res.body.data.length);
        seen.push(...res.body.data.map((c: { id: string }) => c.id));
        cursor = res.body.nextCursor;
      } while (cursor !== null && sizes.length < 5);
      assert.deepEqual(sizes, [4, 2]);
      assert.deepEqual(
        seen,
        ['f', 'e', 'd', 'c', 'b', 'a'].map((n) => ids[n]),
      );
    });

    it('keeps the cursor working together with a filter', async () => {
      const first = await env.request('GET', `${CONVERSIONS}?status=pending&limit=3`, { key });
      assert.equal(first.body.data.length, 3);
      assert.equal(first.body.nextCursor, ids.d);
      const rest = await env.request('GET', `${CONVERSIONS}?status=pending&limit=3&cursor=${first.body.nextCursor}`, {
        key,
      });
      assert.deepEqual(
        rest.body.data.map((c: { id: string }) => c.id),
        [ids.a],
      );
      assert.equal(rest.body.nextCursor, null);
    });

    it("never lists another brand's conversions", async () => {
      const res = await env.request('GET', CONVERSIONS);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, []);
    });
  });
}
