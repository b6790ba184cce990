import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { Database } from '../../src/db/database.js';
import { approveExpiredHolds } from '../../src/modules/conversions/service.js';
import { hotOfferOfBrand } from '../../src/modules/hotRows.js';
import {
  createTestDatabase,
  createTestEnv,
  describeOrSkip,
  postgresOnly,
  type TestDatabase,
  type TestEnv,
  testedDialects,
} from '../helpers.js';
import { waitFor } from '../wait.js';

const NO_LIMIT = { RATE_LIMIT_PER_MINUTE: '100000' };
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const iso = (ms: number) => new Date(ms).toISOString();

/** One brand's view of an env: its offers, partner, conversions and cap.reached events. */
function brandApi(env: TestEnv, key: string) {
  return {
    async offer(caps: Record<string, number>, body: Record<string, unknown> = {}): Promise<string> {
      const res = await env.request('POST', '/api/v1/offers', {
        key,
        body: { name: 'Capped', destinationUrl: 'https://shop.example/?cid={click_id}', caps, ...body },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    },
    async partner(): Promise<string> {
      const res = await env.request('POST', '/api/v1/partners', { key, body: { name: 'P', email: 'p@example.com' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    },
    async record(offerId: string, partnerId: string, from: TestEnv = env) {
      const res = await from.request('POST', '/api/v1/conversions', { key, body: { offerId, partnerId } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    },
    async capEvents(offerId: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', 'cap.reached')
        .orderBy('id')
        .execute();
      return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.offerId === offerId);
    },
  };
}

for (const dialect of testedDialects()) {
  describe(`offer caps (${dialect})`, () => {
    let env: TestEnv;
    let api: ReturnType<typeof brandApi>;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: NO_LIMIT });
      api = brandApi(env, env.brand.apiKey);
      partnerId = await api.partner();
    });
    after(() => env.close());
    const record = (offerId: string) => api.record(offerId, partnerId);

    describe('a daily cap of 3', () => {
      const WEDNESDAY = Date.UTC(2026, 10, 18, 10, 0, 0);

      it('leaves conversions 1 to 3 within the cap and fires cap.reached once, with the third', async () => {
        env.clock.set(WEDNESDAY);
        const offerId = await api.offer({ daily: 3 });
        for (let i = 1; i <= 2; i++) assert.equal((await record(offerId)).capExceeded, false);
        assert.equal((await api.capEvents(offerId)).length, 0, 'nothing before the third');
        assert.equal((await record(offerId)).capExceeded, false);
        const events = await api.capEvents(offerId);
        assert.equal(events.length, 1);
        assert.equal(events[0].createdAt, iso(WEDNESDAY));
        assert.deepEqual(events[0].data, {
          offerId,
          cap: 'daily',
          limit: 3,
          count: 3,
          periodStart: '2026-11-18T00:00:00.000Z',
          periodEnd: '2026-11-19T00:00:00.000Z',
        });
      });

      it('records the fourth pending with capExceeded, even for an offer that starts approved', async () => {
        env.clock.set(WEDNESDAY);
        const offerId = await api.offer({ daily: 3 }, { conversionStatus: 'approved' });
        for (let i = 1; i <= 3; i++) assert.equal((await record(offerId)).status, 'approved');
        const fourth = await record(offerId);
        assert.deepEqual(
          [fourth.status, fourth.capExceeded, fourth.approvedAt, fourth.holdUntil],
          ['pending', true, null, null],
        );
        assert.equal((await api.capEvents(offerId)).length, 1, 'cap.reached does not fire again');
      });

      it('never approves an over-cap conversion automatically when holds expire', async () => {
        env.clock.set(WEDNESDAY);
        const offerId = await api.offer({ daily: 3 }, { holdSeconds: 60 });
        const within = [await record(offerId), await record(offerId), await record(offerId)];
        const over = await record(offerId);
        assert.deepEqual([over.capExceeded, over.holdUntil], [true, null]);
        env.clock.advance(366 * 24 * 3600_000);
        await approveExpiredHolds(env.ctx);
        for (const c of within) {
          assert.equal((await env.request('GET', `/api/v1/conversions/${c.id}`)).body.status, 'approved');
        }
        assert.equal((await env.request('GET', `/api/v1/conversions/${over.id}`)).body.status, 'pending');
      });

      it('starts counting again on the next day', async () => {
        env.clock.set(Date.UTC(2026, 10, 18, 23, 59, 59, 999));
        const offerId = await api.offer({ daily: 3 });
        for (let i = 0; i < 3; i++) await record(offerId);
        assert.equal((await record(offerId)).capExceeded, true);
        env.clock.set(Date.UTC(2026, 10, 19));
        for (let i = 0; i < 3; i++) assert.equal((await record(offerId)).capExceeded, false);
        const events = await api.capEvents(offerId);
        assert.deepEqual(
          events.map((e) => e.data.periodStart),
          ['2026-11-18T00:00:00.000Z', '2026-11-19T00:00:00.000Z'],
        );
      });
    });

    describe('in the brand time zone (Asia/Tokyo, UTC+9)', () => {
      let tokyo: ReturnType<typeof brandApi>;
      let tokyoPartner: string;
      before(async () => {
        tokyo = brandApi(env, (await env.createBrand('Tokyo Brand', { timezone: 'Asia/Tokyo' })).apiKey);
        tokyoPartner = await tokyo.partner();
      });

      it('puts 14:59Z and 15:00Z on different days for the daily cap', async () => {
        const offerId = await tokyo.offer({ daily: 1 });
        env.clock.set(Date.UTC(2026, 10, 18, 14, 59)); // 23:59 on the 18th in Tokyo
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, false);
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, true);
        env.clock.set(Date.UTC(2026, 10, 18, 15, 0)); // 00:00 on the 19th in Tokyo
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, false);
        const events = await tokyo.capEvents(offerId);
        assert.deepEqual(
          events.map((e) => [e.data.periodStart, e.data.periodEnd]),
          [
            ['2026-11-17T15:00:00.000Z', '2026-11-18T15:00:00.000Z'],
            ['2026-11-18T15:00:00.000Z', '2026-11-19T15:00:00.000Z'],
          ],
        );
      });

      it('counts a weekly cap from Monday to Sunday, local time', async () => {
        const offerId = await tokyo.offer({ weekly: 1 });
        env.clock.set(Date.UTC(2026, 10, 15, 15, 0)); // Monday 16 November 00:00 in Tokyo
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, false);
        env.clock.set(Date.UTC(2026, 10, 22, 14, 59)); // Sunday 22 November 23:59 in Tokyo
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, true, 'same week');
        env.clock.set(Date.UTC(2026, 10, 22, 15, 0)); // Monday 23 November 00:00 in Tokyo
        assert.equal((await tokyo.record(offerId, tokyoPartner)).capExceeded, false, 'next week');
        const events = await tokyo.capEvents(offerId);
        assert.deepEqual(
          events.map((e) => [e.data.cap, e.data.periodStart, e.data.periodEnd]),
          [
            ['weekly', '2026-11-15T15:00:00.000Z', '2026-11-22T15:00:00.000Z'],
            ['weekly', '2026-11-22T15:00:00.000Z', '2026-11-29T15:00:00.000Z'],
          ],
        );
      });
    });

    it('reports the first instant of the local day as periodStart when DST skips local midnight', async () => {
      const santiago = brandApi(env, (await env.createBrand('Santiago', { timezone: 'America/Santiago' })).apiKey);
      const offerId = await santiago.offer({ daily: 1 });
      // Clocks go from 00:00 (-04) to 01:00 (-03) on 6 September: that day begins at 04:00Z.
      env.clock.set(Date.UTC(2026, 8, 6, 12));
      await santiago.record(offerId, await santiago.partner());
      const [event] = await santiago.capEvents(offerId);
      assert.deepEqual(
        [event?.data.periodStart, event?.data.periodEnd],
        ['2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z'],
      );
    });

    it('counts a monthly cap per calendar month, across the turn of the year', async () => {
      const offerId = await api.offer({ monthly: 1 });
      env.clock.set(Date.UTC(2026, 11, 1));
      assert.equal((await record(offerId)).capExceeded, false);
      env.clock.set(Date.UTC(2026, 11, 31, 23, 59, 59, 999));
      assert.equal((await record(offerId)).capExceeded, true, 'same month');
      env.clock.set(Date.UTC(2027, 0, 1));
      assert.equal((await record(offerId)).capExceeded, false, 'next month');
      const events = await api.capEvents(offerId);
      assert.deepEqual(
        events.map((e) => [e.data.cap, e.data.periodStart, e.data.periodEnd]),
        [
          ['monthly', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
          ['monthly', '2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z'],
        ],
      );
    });

    it('never resets a global cap, and reports it without a period', async () => {
      const offerId = await api.offer({ global: 2 });
      await record(offerId);
      await record(offerId);
      env.clock.advance(400 * 24 * 3600_000);
      assert.equal((await record(offerId)).capExceeded, true);
      const events = await api.capEvents(offerId);
      assert.deepEqual(
        events.map((e) => e.data),
        [{ offerId, cap: 'global', limit: 2, count: 2, periodStart: null, periodEnd: null }],
      );
    });

    it('does not count rejected conversions, and still fires cap.reached only once per period', async () => {
      const offerId = await api.offer({ daily: 3 });
      const first = await record(offerId);
      await record(offerId);
      await record(offerId);
      const rejected = await env.request('POST', `/api/v1/conversions/${first.id}/reject`, {
        body: { reason: 'fake' },
      });
      assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
      assert.equal((await record(offerId)).capExceeded, false, 'back to 3 of 3');
      assert.equal((await record(offerId)).capExceeded, true, '4 of 3');
      assert.equal((await api.capEvents(offerId)).length, 1);
    });

    it('does not open a slot when a conversion recorded before the cap existed is rejected', async () => {
      const offerId = await api.offer({});
      const early = await record(offerId);
      const capped = await env.request('PATCH', `/api/v1/offers/${offerId}`, { body: { caps: { daily: 2 } } });
      assert.equal(capped.status, 200, JSON.stringify(capped.body));
      await record(offerId);
      await record(offerId);
      await env.request('POST', `/api/v1/conversions/${early.id}/reject`, { body: { reason: 'fake' } });
      assert.equal((await record(offerId)).capExceeded, true, 'the third non-rejected conversion of a daily cap of 2');
    });

    describe('caps changed on an offer that has conversions', () => {
      const DAY = Date.UTC(2026, 10, 24, 9);
      const patchCaps = async (offerId: string, caps: Record<string, number | null>) => {
        const res = await env.request('PATCH', `/api/v1/offers/${offerId}`, { body: { caps } });
        assert.equal(res.status, 200, JSON.stringify(res.body));
      };
      const reject = async (id: string) => {
        const res = await env.request('POST', `/api/v1/conversions/${id}/reject`, { body: { reason: 'fake' } });
        assert.equal(res.status, 200, JSON.stringify(res.body));
      };

      it('counts the conversions recorded before a cap was set, and fires cap.reached at once when they reach it', async () => {
        env.clock.set(DAY);
        const offerId = await api.offer({});
        for (let i = 0; i < 3; i++) assert.equal((await record(offerId)).capExceeded, false);
        env.clock.set(DAY + 60_000);
        await patchCaps(offerId, { daily: 2, global: 2 });
        const events = await api.capEvents(offerId);
        assert.deepEqual(
          events.map((e) => [e.data.cap, e.data.limit, e.data.count, e.createdAt]),
          [
            ['daily', 2, 3, iso(DAY + 60_000)],
            ['global', 2, 3, iso(DAY + 60_000)],
          ],
        );
        assert.equal((await record(offerId)).capExceeded, true, 'the fourth conversion of the day is over both caps');
        assert.equal((await api.capEvents(offerId)).length, 2, 'cap.reached does not fire again');
      });

      it('fires cap.reached once when a cap is lowered under the count, and not when it is raised', async () => {
        env.clock.set(DAY);
        const offerId = await api.offer({ daily: 5 });
        for (let i = 0; i < 3; i++) await record(offerId);
        await patchCaps(offerId, { daily: 10 });
        assert.equal((await api.capEvents(offerId)).length, 0, 'a raised cap is not reached');
        await patchCaps(offerId, { daily: 2 });
        const [event, ...more] = await api.capEvents(offerId);
        assert.deepEqual([event?.data.limit, event?.data.count, more.length], [2, 3, 0]);
        assert.equal((await record(offerId)).capExceeded, true);
        await patchCaps(offerId, { daily: 1 });
        assert.equal((await api.capEvents(offerId)).length, 1, 'once per cap and period');
      });

      it('uncounts a conversion counted when its cap was set once, when it is rejected', async () => {
        env.clock.set(DAY);
        const offerId = await api.offer({ daily: 5 });
        const counted = await record(offerId);
        await patchCaps(offerId, { daily: null });
        await record(offerId); // while the offer has no cap
        await patchCaps(offerId, { daily: 5 }); // counts both; the first is not marked twice
        await reject(counted.id);
        const results = [];
        for (let i = 0; i < 5; i++) results.push((await record(offerId)).capExceeded);
        assert.deepEqual(results, [false, false, false, false, true], '1 left after the rejection, then 4 up to 5');
        const [event] = await api.capEvents(offerId);
        assert.deepEqual([event?.data.limit, event?.data.count], [5, 5]);
      });
    });

    describe('the tracking link of a capped offer', () => {
      const follow = async (offerId: string, query = '') => {
        const res = await env.app.inject({
          url: `/t/${offerId}/${partnerId}${query}`,
          headers: { 'user-agent': UA },
          remoteAddress: '81.2.69.142',
        });
        assert.equal(res.statusCode, 302, res.body);
        return String(res.headers.location);
      };

      it('goes to the fallback URL, macros filled, while a cap is reached', async () => {
        env.clock.set(Date.UTC(2026, 10, 18, 12));
        const offerId = await api.offer(
          { daily: 1 },
          { fallbackUrl: 'https://fallback.example/?cid={click_id}&oid={offer_id}&s={sub1}' },
        );
        assert.match(await follow(offerId), /^https:\/\/shop\.example\/\?cid=clk_/);
        await record(offerId);
        const location = await follow(offerId, '?sub1=two%20words');
        const [latest] = (await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=1`)).body.data;
        assert.equal(location, `https://fallback.example/?cid=${latest.id}&oid=${offerId}&s=two%20words`);
        env.clock.set(Date.UTC(2026, 10, 19));
        assert.match(await follow(offerId), /^https:\/\/shop\.example\//, 'the next day the cap is open again');
      });

      it('goes to the destination URL while a cap is reached when there is no fallback URL', async () => {
        const offerId = await api.offer({ daily: 1 });
        await record(offerId);
        assert.match(await follow(offerId), /^https:\/\/shop\.example\/\?cid=clk_/);
      });
    });

    it('marks exactly 15 of 20 concurrent conversions over a daily cap of 5, with one cap.reached', async () => {
      const offerId = await api.offer({ daily: 5 });
      const results = await Promise.all(Array.from({ length: 20 }, () => record(offerId)));
      assert.equal(results.filter((c) => c.capExceeded).length, 15);
      const events = await api.capEvents(offerId);
      assert.equal(events.length, 1);
      assert.equal(events[0].data.count, 5);
    });
  });

  describeOrSkip(`offer caps with two app instances on one database (${dialect})`, postgresOnly(dialect), () => {
    let database: TestDatabase;
    let second: Database;
    let envA: TestEnv;
    let envB: TestEnv;
    before(async () => {
      database = await createTestDatabase(dialect);
      envA = await createTestEnv(dialect, { database, env: NO_LIMIT });
      // A second pool on the same schema stands in for a second API process.
      second = new Database({
        databaseUrl: database.url,
        dataDir: database.dataDir,
        schema: database.schema ?? undefined,
        poolSize: 5,
      });
      envB = await createTestEnv(dialect, { database: { ...database, db: second }, clock: envA.clock, env: NO_LIMIT });
    });
    after(async () => {
      await envA.close();
      await envB.close();
      await second.close();
      await envA.ctx.db.close();
      await database.drop();
    });

    it('fires exactly one cap.reached when both record conversions at the same time', async () => {
      const api = brandApi(envA, envA.brand.apiKey);
      const offerId = await api.offer({ daily: 5 });
      const partnerId = await api.partner();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.record(offerId, partnerId, i % 2 === 0 ? envA : envB)),
      );
      assert.equal(results.filter((c) => c.capExceeded).length, 15);
      assert.equal((await api.capEvents(offerId)).length, 1);
    });

    // Conversions on an offer without caps are stored in batches (conversions/postgresBatch.ts).
    // A PATCH setting the offer's first cap counts the conversions stored so far: it must also
    // count a batch that decided "no caps" before it and commits after it began.
    it('counts a batch still being stored while a PATCH sets the offer its first cap', async () => {
      const api = brandApi(envA, envA.brand.apiKey);
      const offerId = await api.offer({}, { conversionStatus: 'approved' });
      const partnerId = await api.partner();
      for (let i = 0; i < 5; i++) await api.record(offerId, partnerId);

      // A trigger holds the batch's inserts until the test lets them go: the batch is in flight.
      const gateKey = 1 + Math.floor(Math.random() * 2 ** 30);
      const ddl = envA.ctx.db.standaloneWriter;
      await sql`create function hold_conversion() returns trigger language plpgsql as $$
        begin perform pg_advisory_xact_lock_shared(${sql.lit(gateKey)}::bigint); return new; end $$`.execute(ddl);
      await sql`create trigger hold_conversion before insert on conversions for each row
        when (new.external_txn_id like 'held-%') execute function hold_conversion()`.execute(ddl);
      try {
        let open = () => {};
        const opened = new Promise<void>((resolve) => {
          open = resolve;
        });
        let gateHeld = () => {};
        const held = new Promise<void>((resolve) => {
          gateHeld = resolve;
        });
        const gate = second.transact(async (trx) => {
          await sql`select pg_advisory_xact_lock(${gateKey}::bigint)`.execute(trx);
          gateHeld();
          await opened;
        });
        await held;
        const batch = Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            envA.request('POST', '/api/v1/conversions', { body: { offerId, partnerId, externalTxnId: `held-${i}` } }),
          ),
        );
        await waitFor('the batch to wait at the gate', () => waitersOn(gateKey), 10_000, 20);
        let patched = false;
        const patch = envA
          .request('PATCH', `/api/v1/offers/${offerId}`, { body: { caps: { daily: 12 } } })
          .finally(() => {
            patched = true;
          });
        // Either the PATCH is done (it did not wait for the batch) or it waits for a row lock.
        await waitFor('the PATCH to finish or wait', async () => patched || (await patchWaitsForLock()), 10_000, 20);
        open();
        await gate;
        const answers = await batch;
        assert.deepEqual(
          answers.map((r) => r.status),
          Array(10).fill(201),
        );
        assert.equal((await patch).status, 200);
      } finally {
        await sql`drop trigger hold_conversion on conversions`.execute(ddl);
        await sql`drop function hold_conversion()`.execute(ddl);
      }

      const events = await api.capEvents(offerId);
      assert.deepEqual(
        events.map((e) => [e.data.cap, e.data.limit, e.data.count]),
        [['daily', 12, 15]],
        'the PATCH counts the 5 stored before it and the 10 of the batch, and fires cap.reached at once',
      );
      const next = await api.record(offerId, partnerId);
      assert.deepEqual([next.capExceeded, next.status], [true, 'pending']);
      const listed = await envA.request('GET', `/api/v1/conversions?offerId=${offerId}&limit=100`);
      const exceeded = listed.body.data.filter((c: { capExceeded: boolean }) => c.capExceeded);
      assert.deepEqual([listed.body.data.length, exceeded.length], [16, 1]);
      assert.equal((await api.capEvents(offerId)).length, 1);
    });

    it("counts conversions that this process batches after another process's PATCH set the offer's first cap", async () => {
      const api = brandApi(envA, envA.brand.apiKey);
      const offerId = await api.offer({}, { conversionStatus: 'approved' });
      const partnerId = await api.partner();
      for (let i = 0; i < 2; i++) await api.record(offerId, partnerId);
      // Process A holds the offer without caps in its cache (the clock stands still, so it stays)...
      assert.equal((await hotOfferOfBrand(envA.ctx, envA.brand.id, offerId))?.cap_daily, null);
      // ...when process B sets a daily cap of 3: 2 counted, not reached yet.
      const patched = await envB.request('PATCH', `/api/v1/offers/${offerId}`, {
        key: envA.brand.apiKey,
        body: { caps: { daily: 3 } },
      });
      assert.equal(patched.status, 200);
      assert.equal((await api.capEvents(offerId)).length, 0);

      const results = await Promise.all(Array.from({ length: 10 }, () => api.record(offerId, partnerId, envA)));
      assert.equal(results.filter((c) => c.capExceeded).length, 9, 'only the third of the day is within the cap');
      const events = await api.capEvents(offerId);
      assert.deepEqual(
        events.map((e) => [e.data.limit, e.data.count]),
        [[3, 3]],
      );
    });

    /** Whether a statement waits for the advisory lock `key` (the test's gate). */
    async function waitersOn(key: number): Promise<boolean> {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_locks
        where locktype = 'advisory' and not granted and classid = 0 and objid = ${key}`.execute(second.read);
      return Number(rows[0]?.n) > 0;
    }

    /** Whether an offer's row lock (a PATCH's) waits for another transaction. */
    async function patchWaitsForLock(): Promise<boolean> {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like '%"offers"%for update%'`.execute(second.read);
      return Number(rows[0]?.n) > 0;
    }
  });
}
