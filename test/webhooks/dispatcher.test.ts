import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { Database } from '../../src/db/database.js';
import { claimDueDeliveries } from '../../src/modules/deliveries/claims.js';
import { completeAttempt } from '../../src/modules/deliveries/completion.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { DEAD_AFTER_MS, recordHeartbeat } from '../../src/modules/deliveries/heartbeat.js';
import { recordEvent } from '../../src/modules/events/outbox.js';
import { createTestDatabase, createTestEnv, type TestDatabase, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, SystemTestClock, subscribe } from './harness.js';

function attemptsOf(env: TestEnv, deliveryIds: string[]) {
  return env.ctx.db.read
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds.length > 0 ? deliveryIds : ['none'])
    .execute();
}

for (const dialect of testedDialects()) {
  describe(`dispatcher crash recovery (${dialect})`, () => {
    let env: TestEnv;
    let receiver: Receiver;
    before(async () => {
      env = await createTestEnv(dialect);
      receiver = await Receiver.answering(200);
    });
    afterEach(() => clearWebhooks(env));
    after(async () => {
      await receiver.close();
      await env.close();
    });

    it("takes over a dead worker's leases once its heartbeat is 3 s old, long before they expire", async () => {
      const own = await Receiver.answering(200);
      const sub = await subscribe(env, { url: own.url });
      await firePartnerApproved(env);
      const [claimed] = await claimDueDeliveries(env.ctx, { owner: 'killed-worker', limit: 10, leaseMs: 60_000 });
      assert.ok(claimed);
      const dispatcher = new Dispatcher(env.ctx);
      try {
        env.clock.advance(2999);
        assert.equal(await dispatcher.runOnce(), 0, 'a heartbeat 2,999 ms old still counts');
        env.clock.advance(1);
        assert.equal(await dispatcher.runOnce(), 1, 'the silent owner is dead: its lease is taken over');
      } finally {
        await dispatcher.close();
        await own.close();
      }
      assert.deepEqual(own.headerValues('x-service-webhook-id'), [claimed.id]);
      const [row] = await deliveriesOf(env, sub.id);
      assert.equal(row?.status, 'succeeded');
    });

    it('leaves a slow but living worker its leases while its heartbeat goes on', async () => {
      const own = await Receiver.answering(200);
      await subscribe(env, { url: own.url });
      await firePartnerApproved(env);
      const [claimed] = await claimDueDeliveries(env.ctx, { owner: 'slow-worker', limit: 10, leaseMs: 60_000 });
      assert.ok(claimed);
      const dispatcher = new Dispatcher(env.ctx);
      try {
        for (let second = 1; second <= 10; second++) {
          env.clock.advance(1000);
          await env.ctx.db.transact((trx) => recordHeartbeat(trx, 'slow-worker', env.clock.now()));
          assert.equal(await dispatcher.runOnce(), 0, `not taken after ${second} s`);
        }
        assert.equal(own.requests.length, 0);
      } finally {
        await dispatcher.close();
        await own.close();
      }
    });

    it("picks up a dead worker's claimed deliveries only once their lease has expired", async () => {
      const sub = await subscribe(env, { url: receiver.url });
      await firePartnerApproved(env);
      await firePartnerApproved(env);
      const claimed = await claimDueDeliveries(env.ctx, {
        owner: 'dead-worker',
        limit: 10,
        leaseMs: 1000,
      });
      assert.equal(claimed.length, 2);
      const dispatcher = new Dispatcher(env.ctx);
      try {
        assert.equal(await dispatcher.runOnce(), 0, 'leased deliveries are not taken while the lease holds');
        env.clock.advance(999);
        assert.equal(await dispatcher.runOnce(), 0, 'nor 1 ms before it expires');
        assert.equal(receiver.requests.length, 0);
        env.clock.advance(1);
        assert.equal(await dispatcher.runOnce(), 2, 'the expired leases are taken over');
      } finally {
        await dispatcher.close();
      }
      assert.deepEqual(receiver.headerValues('x-service-webhook-id').sort(), claimed.map((c) => c.id).sort());
      const rows = await deliveriesOf(env, sub.id);
      assert.deepEqual(
        rows.map((r) => [r.status, r.attempt_count, r.lease_owner]),
        [
          ['succeeded', 1, null],
          ['succeeded', 1, null],
        ],
      );
    });

    it('ignores a late completion from the worker whose lease was taken over', async () => {
      const sub = await subscribe(env, { url: receiver.url });
      await firePartnerApproved(env);
      const [stale] = await claimDueDeliveries(env.ctx, {
        owner: 'dead-worker',
        limit: 10,
        leaseMs: 1000,
      });
      assert.ok(stale);
      env.clock.advance(1000);
      const dispatcher = new Dispatcher(env.ctx);
      assert.equal(await dispatcher.runOnce(), 1);
      await dispatcher.close();
      const late = await completeAttempt(env.ctx, stale, 'dead-worker', env.clock.now(), {
        statusCode: 500,
        latencyMs: 5,
        responseBody: 'late',
        error: null,
      });
      assert.equal(late.recorded, false);
      const [row] = await deliveriesOf(env, sub.id);
      assert.equal(row?.status, 'succeeded');
      const attempts = await attemptsOf(env, [stale.id]);
      assert.deepEqual(
        attempts.map((a) => [a.number, a.status_code]),
        [[1, 200]],
      );
    });
  });

  describe(`two dispatchers on one database (${dialect})`, () => {
    let database: TestDatabase;
    let secondDb: Database;
    let first: TestEnv;
    let second: TestEnv;
    const settings = { WEBHOOK_CONCURRENCY: '4' };
    before(async () => {
      database = await createTestDatabase(dialect);
      first = await createTestEnv(dialect, { database, env: settings });
      // A second connection pool on the same database, as a second worker process would have.
      secondDb = new Database({
        databaseUrl: database.url,
        dataDir: database.dataDir,
        schema: database.schema ?? undefined,
        poolSize: 5,
      });
      second = await createTestEnv(dialect, {
        database: { ...database, db: secondDb },
        clock: first.clock,
        env: settings,
      });
    });
    after(async () => {
      await first.close();
      await second.close();
      await secondDb.close();
      await database.db.close();
      await database.drop();
    });

    it('delivers each wh_ exactly once when both run at the same time', async () => {
      const receiver = await Receiver.start(() => ({ status: 200, delayMs: 10 }));
      const one = new Dispatcher(first.ctx);
      const two = new Dispatcher(second.ctx);
      try {
        const sub = await subscribe(first, { url: receiver.url });
        const EVENTS = 30;
        for (let i = 0; i < EVENTS; i++) await firePartnerApproved(first);
        const [a, b] = await Promise.all([one.runOnce(), two.runOnce()]);
        assert.equal(a + b, EVENTS);
        assert.ok(a > 0 && b > 0, `both dispatchers took part (${a} + ${b})`);
        assert.equal(receiver.requests.length, EVENTS);
        const ids = receiver.headerValues('x-service-webhook-id');
        assert.equal(new Set(ids).size, EVENTS, 'no wh_ id was sent twice');
        const rows = await deliveriesOf(first, sub.id);
        assert.equal(rows.length, EVENTS);
        assert.deepEqual(new Set(ids), new Set(rows.map((r) => r.id)));
        assert.ok(rows.every((r) => r.status === 'succeeded' && r.attempt_count === 1));
        const attempts = await attemptsOf(
          first,
          rows.map((r) => r.id),
        );
        assert.equal(attempts.length, EVENTS);
        assert.equal(await one.runOnce(), 0);
        assert.equal(await two.runOnce(), 0);
      } finally {
        await one.close();
        await two.close();
        await receiver.close();
      }
    });
  });

  describe(`dispatcher real-time loop (${dialect})`, () => {
    let database: TestDatabase;
    let env: TestEnv;
    before(async () => {
      database = await createTestDatabase(dialect);
      env = await createTestEnv(dialect, {
        database,
        clock: new SystemTestClock(),
        env: { WEBHOOK_TIMEOUT: '2s', WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '2' },
      });
    });
    afterEach(() => clearWebhooks(env));
    after(async () => {
      await env.close();
      await database.drop();
    });

    it('keeps delivering to a fast receiver while a slow one hangs until its time-out', async () => {
      const slow = await Receiver.start(() => ({ hang: true }));
      const fast = await Receiver.answering(200);
      const slowSub = await subscribe(env, { url: slow.url });
      await subscribe(env, { url: fast.url });
      const dispatcher = new Dispatcher(env.ctx);
      const ac = new AbortController();
      const running = dispatcher.run(ac.signal);
      try {
        await Promise.all(Array.from({ length: 10 }, () => firePartnerApproved(env)));
        await fast.waitForRequests(10, 1500); // ~1 s, with slack for a loaded machine
        assert.equal(fast.requests.length, 10);
        assert.equal(slow.requests.length, 2, 'the slow receiver holds just its two per-subscription slots');
        const slowRows = await deliveriesOf(env, slowSub.id);
        assert.equal(slowRows.length, 10);
        assert.equal(
          (
            await attemptsOf(
              env,
              slowRows.map((r) => r.id),
            )
          ).length,
          0,
          'its attempts are still hanging',
        );
      } finally {
        await slow.close();
        ac.abort();
        await running;
        await fast.close();
      }
    });

    it('writes its heartbeat while every pooled connection is busy, so other workers do not take a loaded one for dead', async (t) => {
      if (dialect !== 'postgres') {
        t.skip('SQLite has no connection pool for the heartbeat to queue in (one writer, group commit)');
        return;
      }
      const watcher = new pg.Client({ connectionString: database.url ?? undefined });
      await watcher.connect();
      const dispatcher = new Dispatcher(env.ctx);
      const ac = new AbortController();
      const running = dispatcher.run(ac.signal);
      try {
        const beatAt = async () => {
          const { rows } = await watcher.query(
            `select heartbeat_at from ${database.schema}.delivery_workers where id = $1`,
            [dispatcher.owner],
          );
          return Number(rows[0]?.heartbeat_at ?? Number.NaN);
        };
        while (Number.isNaN(await beatAt())) await sleep(50);
        // More statements than the pool has connections, each holding its connection for
        // longer than DEAD_AFTER_MS: a beat that queued behind them would come too late.
        const busyFrom = env.clock.now();
        const busy = Array.from({ length: 8 }, () =>
          sql`select pg_sleep(${(DEAD_AFTER_MS + 1500) / 1000})`.execute(env.ctx.db.read),
        );
        await sleep(DEAD_AFTER_MS + 500);
        const last = await beatAt();
        await Promise.all(busy);
        assert.ok(last > busyFrom, `a beat was written while the pool was busy (last ${busyFrom - last} ms before it)`);
      } finally {
        ac.abort();
        await running;
        await watcher.end();
      }
    });

    it('never sends a delivery whose creating transaction rolled back', async () => {
      const receiver = await Receiver.answering(200);
      await subscribe(env, { url: receiver.url });
      const dispatcher = new Dispatcher(env.ctx, { pollMs: 50 });
      const ac = new AbortController();
      const running = dispatcher.run(ac.signal);
      try {
        await sleep(100);
        let phantom = '';
        await assert.rejects(
          env.ctx.db.transact(async (trx) => {
            const event = await recordEvent(env.ctx, trx, env.brand.id, 'partner.approved', {
              partnerId: 'prt_rolled_back',
              metadata: {},
              name: 'Never',
              email: 'never@example.com',
              website: null,
              status: 'active',
            });
            phantom = event.id;
            throw new Error('the state change failed after its event was recorded');
          }),
          /state change failed/,
        );
        await firePartnerApproved(env);
        await receiver.waitForRequests(1, 5000);
        await sleep(300);
        assert.equal(receiver.requests.length, 1);
        const sent = JSON.parse(receiver.requests[0]?.body.toString() ?? '{}');
        assert.notEqual(sent.id, phantom);
        assert.equal(sent.data.name === 'Never', false);
      } finally {
        ac.abort();
        await running;
        await receiver.close();
      }
    });

    it('delivers a newly committed event at once, without waiting for the next poll', async () => {
      const receiver = await Receiver.answering(200);
      await subscribe(env, { url: receiver.url });
      // The next poll is an hour away: an event that arrives within the test's patience was
      // handed over by the transaction that committed it. How fast that is belongs to the
      // benchmark, not to an assertion that a busy machine can break.
      const dispatcher = new Dispatcher(env.ctx, { pollMs: 60 * 60_000 });
      const ac = new AbortController();
      const running = dispatcher.run(ac.signal);
      try {
        await sleep(150); // let the loop make its first (empty) claim and go to sleep
        for (let n = 1; n <= 3; n++) {
          await firePartnerApproved(env);
          await receiver.waitForRequests(n, 10_000);
          assert.equal(receiver.requests.length, n, `event ${n} was sent once, without a poll`);
          await sleep(50);
        }
        assert.equal(receiver.requests.length, 3);
      } finally {
        ac.abort();
        await running;
        await receiver.close();
      }
    });
  });
}
