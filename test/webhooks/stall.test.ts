/**
 * A dispatcher whose event loop stalls for longer than the take-over threshold (a long GC, a
 * frozen container, CPU throttling) may have lost its leases meanwhile: another worker that
 * saw its heartbeat go silent took its deliveries over. What still waited in its lanes must
 * not be sent when it resumes (docs/deliveries.md, "One sender at a time").
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { claimDueDeliveries } from '../../src/modules/deliveries/claims.js';
import { CompletionBatcher, completeAttempt } from '../../src/modules/deliveries/completion.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { DEAD_AFTER_MS } from '../../src/modules/deliveries/heartbeat.js';
import { type AttemptOutcome, Sender } from '../../src/modules/deliveries/sender.js';
import type { OutgoingRequest } from '../../src/modules/deliveries/target.js';
import {
  anotherHandle,
  createTestDatabase,
  createTestEnv,
  type TestDatabase,
  type TestEnv,
  testedDialects,
} from '../helpers.js';
import { waitFor } from '../wait.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, SystemTestClock, subscribe } from './harness.js';

/**
 * The clock of a worker that stalls: while frozen, its heartbeats keep writing the time it
 * froze at, so to every other worker it is as silent as a process that does not run; thawed,
 * it jumps to the real time, as a resumed process finds it.
 */
class StallingClock extends SystemTestClock {
  private frozenAt: number | null = null;

  override now(): number {
    return this.frozenAt ?? super.now();
  }

  freeze(): void {
    this.frozenAt = super.now();
  }

  thaw(): void {
    this.frozenAt = null;
  }
}

/**
 * A sender whose sends reach the receiver at once but whose outcomes wait for `open()`: the
 * sends are in flight, holding their slots, so the rest of the target's deliveries wait in
 * the lane. It remembers which deliveries it sent.
 */
class GatedSender extends Sender {
  readonly sent: string[] = [];
  finished = 0;
  private opened = false;
  private readonly waiting: Array<() => void> = [];

  override async send(outgoing: OutgoingRequest): Promise<AttemptOutcome> {
    this.sent.push(String(outgoing.headers['X-Service-Webhook-Id']));
    const outcome = await super.send(outgoing);
    if (!this.opened) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.finished += 1;
    return outcome;
  }

  open(): void {
    this.opened = true;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/** Blocks this process's event loop for `ms`, as a stalled worker's is blocked. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

function attemptsOf(env: TestEnv, ids: string[]) {
  return env.ctx.db.read
    .selectFrom('webhook_attempts')
    .select(['delivery_id', 'number', 'status_code'])
    .where('delivery_id', 'in', ids.length > 0 ? ids : ['none'])
    .orderBy('delivery_id')
    .orderBy('number')
    .execute();
}

/** Two rounds of one target's slots: two in flight, two waiting in the lane. */
const SETTINGS = { WEBHOOK_CONCURRENCY: '4', WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '2', WEBHOOK_TIMEOUT: '5s' };
const DELIVERIES = 4;
const PER_TARGET = 2;

/**
 * A dispatcher of `env` whose sends are held in flight until `gated.open()`, with DELIVERIES
 * deliveries to a fresh receiver: PER_TARGET of them on the wire and the rest waiting in its
 * lane when `work` starts. Everything is stopped and closed after it.
 */
async function withLaneWaiting(
  env: TestEnv,
  work: (held: { receiver: Receiver; gated: GatedSender; subscriptionId: string }) => Promise<void>,
): Promise<void> {
  const receiver = await Receiver.answering(200);
  const gated = new GatedSender(5000, true);
  const stop = new AbortController();
  const running = new Dispatcher(env.ctx, { sender: gated, pollMs: 50 }).run(stop.signal);
  try {
    const sub = await subscribe(env, { url: receiver.url });
    for (let i = 0; i < DELIVERIES; i++) await firePartnerApproved(env);
    await waitFor(
      'two sends in flight, the rest waiting in the lane',
      () => gated.sent.length === PER_TARGET,
      5000,
      20,
    );
    await work({ receiver, gated, subscriptionId: sub.id });
  } finally {
    gated.open();
    stop.abort();
    await running;
    await receiver.close();
  }
}

for (const dialect of testedDialects()) {
  describe(`a dispatcher that stalls (${dialect})`, () => {
    let database: TestDatabase;
    let secondDb: Database;
    let first: TestEnv;
    let second: TestEnv;
    const stalling = new StallingClock();
    before(async () => {
      database = await createTestDatabase(dialect);
      first = await createTestEnv(dialect, { database, env: SETTINGS, clock: stalling });
      // A second connection pool on the same database, as a second worker process has.
      secondDb = anotherHandle(database).db;
      second = await createTestEnv(dialect, {
        database: { ...database, db: secondDb },
        clock: new SystemTestClock(),
        env: SETTINGS,
      });
    });
    afterEach(() => {
      stalling.thaw();
      return clearWebhooks(first);
    });
    after(async () => {
      await first.close();
      await second.close();
      await secondDb.close();
      await database.db.close();
      await database.drop();
    });

    it('sends none of the deliveries another worker took over while it was silent', async () => {
      const receiver = await Receiver.answering(200);
      const gated = new GatedSender(5000, true);
      const one = new Dispatcher(first.ctx, { sender: gated, pollMs: 50 });
      const two = new Dispatcher(second.ctx, { pollMs: 50 });
      const stopOne = new AbortController();
      const stopTwo = new AbortController();
      const runningOne = one.run(stopOne.signal);
      let runningTwo: Promise<void> | null = null;
      try {
        const sub = await subscribe(first, { url: receiver.url });
        for (let i = 0; i < DELIVERIES; i++) await firePartnerApproved(first);
        await waitFor(
          'two sends in flight, the rest waiting in the lane',
          () => gated.sent.length === PER_TARGET,
          5000,
          20,
        );
        const leased = await deliveriesOf(first, sub.id);
        assert.equal(leased.length, DELIVERIES);
        assert.ok(
          leased.every((row) => row.lease_owner === one.owner),
          'every delivery is leased to the first worker',
        );
        const inFlight = [...gated.sent];

        stalling.freeze();
        runningTwo = two.run(stopTwo.signal);
        await waitFor(
          'the second worker to take over and deliver everything',
          async () => (await deliveriesOf(first, sub.id)).every((row) => row.status === 'succeeded'),
          DEAD_AFTER_MS + 10_000,
          50,
        );

        // The first worker resumes: its sends in flight come back, its lanes could send again.
        stalling.thaw();
        gated.open();
        await waitFor('the sends in flight at the stall to finish', () => gated.finished >= PER_TARGET, 5000, 10);
        stopOne.abort();
        await runningOne;

        assert.deepEqual(gated.sent, inFlight, 'after resuming, the stalled worker sent nothing more');
        const received = countBy(receiver.headerValues('x-service-webhook-id'));
        const rows = await deliveriesOf(first, sub.id);
        assert.equal(rows.length, DELIVERIES);
        for (const row of rows) {
          const expected = inFlight.includes(row.id) ? 2 : 1;
          assert.equal(
            received.get(row.id),
            expected,
            `${row.id} received ${expected === 2 ? 'again only as it was in flight' : 'once'}`,
          );
          assert.equal(row.status, 'succeeded');
          assert.equal(row.attempt_count, 1);
          assert.equal(row.lease_owner, null);
        }
        const attempts = await attemptsOf(
          first,
          rows.map((r) => r.id),
        );
        assert.deepEqual(
          attempts.map((a) => [a.number, a.status_code]),
          rows.map(() => [1, 200]),
        );
      } finally {
        stalling.thaw();
        gated.open();
        stopOne.abort();
        stopTwo.abort();
        await runningOne;
        await runningTwo;
        await receiver.close();
      }
    });

    it('sends what waited in its lanes once, itself, when nobody took over during its stall', async () => {
      await withLaneWaiting(first, async ({ receiver, gated, subscriptionId }) => {
        // A real stall of this process's event loop, longer than the take-over threshold.
        blockEventLoop(DEAD_AFTER_MS + 500);
        gated.open();
        await waitFor(
          'every delivery to be sent and recorded',
          async () => (await deliveriesOf(first, subscriptionId)).every((row) => row.status === 'succeeded'),
          10_000,
          50,
        );

        const rows = await deliveriesOf(first, subscriptionId);
        assert.equal(rows.length, DELIVERIES);
        const received = countBy(receiver.headerValues('x-service-webhook-id'));
        for (const row of rows) {
          assert.equal(received.get(row.id), 1, `${row.id} was sent once`);
          assert.deepEqual([row.attempt_count, row.unrecorded_sends, row.lease_owner], [1, 0, null]);
        }
        assert.equal(gated.sent.length, DELIVERIES);
        assert.ok(
          first.logs.some((line) => line.includes('silent long enough to lose its leases')),
          'the stall was noticed and what waited was claimed again, not sent on the old leases',
        );
      });
    });

    it('hands back what waited once the database answers again, when it could not at the stall', async () => {
      const db = first.ctx.db;
      const transact = db.transact.bind(db);
      const transactAside = db.transactAside.bind(db);
      const logsBefore = first.logs.length;
      const logged = (text: string) => first.logs.slice(logsBefore).some((line) => line.includes(text));
      await withLaneWaiting(first, async ({ receiver, gated, subscriptionId }) => {
        const inFlight = [...gated.sent];
        const waited = (await deliveriesOf(first, subscriptionId))
          .map((r) => r.id)
          .filter((id) => !inFlight.includes(id));
        try {
          // The database goes away for longer than the take-over threshold: no heartbeat, and
          // the stall found when the sends in flight come back cannot hand anything back.
          const away = () => Promise.reject(new Error('the database is away'));
          db.transact = away;
          // The heartbeat's own connection too (Database.transactAside).
          db.transactAside = away;
          await waitFor(
            'the heartbeat to go silent',
            () => logged('could not record the dispatcher heartbeat'),
            5000,
            50,
          );
          await new Promise((resolve) => setTimeout(resolve, DEAD_AFTER_MS));
          gated.open();
          await waitFor(
            'the hand-back to fail',
            () => first.logs.some((l) => l.includes('could not hand back')),
            5000,
            20,
          );
        } finally {
          db.transact = transact;
          db.transactAside = transactAside;
        }

        // Long before their leases would expire (twice the time-out and a margin).
        await receiver.waitForRequests(DELIVERIES, 4000);
        await waitFor(
          'the deliveries that waited to be recorded',
          async () =>
            (await deliveriesOf(first, subscriptionId)).filter((r) => waited.includes(r.id) && r.status === 'succeeded')
              .length === waited.length,
          4000,
          50,
        );
        const received = countBy(receiver.headerValues('x-service-webhook-id'));
        for (const id of [...inFlight, ...waited]) assert.equal(received.get(id), 1, `${id} was sent once`);
      });
    });

    it('refuses a late completion once the same worker has claimed the delivery again', async () => {
      const receiver = await Receiver.answering(200);
      const sub = await subscribe(first, { url: receiver.url });
      await firePartnerApproved(first);
      await firePartnerApproved(first);
      const leaseMs = 1000;
      // The first worker claims both, then stalls past its lease: another one takes over,
      // and records a failed attempt of each, due again 1 s later.
      const stale = await claimDueDeliveries(first.ctx, { owner: 'worker-a', limit: 10, leaseMs });
      assert.equal(stale.length, 2);
      stalling.advance(leaseMs);
      const takenOver = await claimDueDeliveries(first.ctx, { owner: 'worker-b', limit: 10, leaseMs });
      assert.equal(takenOver.length, 2);
      const failed: AttemptOutcome = { statusCode: 500, latencyMs: 5, responseBody: null, error: null };
      for (const delivery of takenOver) {
        const done = await completeAttempt(first.ctx, delivery, 'worker-b', stalling.now(), failed);
        assert.deepEqual([done.recorded, done.verdict.status], [true, 'retry_scheduled']);
      }
      // Resumed, the first worker claims the retries (its own, fresh leases) before its late
      // outcomes of the old sends are written: those must not be taken for the new attempts.
      stalling.advance(1000);
      const again = await claimDueDeliveries(first.ctx, { owner: 'worker-a', limit: 10, leaseMs: 60_000 });
      assert.equal(again.length, 2);
      const ok: AttemptOutcome = { statusCode: 200, latencyMs: 5, responseBody: null, error: null };
      const [alone, batched] = stale as [(typeof stale)[0], (typeof stale)[0]];
      const late = await completeAttempt(first.ctx, alone, 'worker-a', stalling.now(), ok);
      assert.equal(late.recorded, false, 'a late completion (written alone) is refused');
      // Several completions at once take PostgreSQL's one-statement path.
      const batcher = new CompletionBatcher(first.ctx);
      const fresh = again.find((d) => d.id === alone.id);
      assert.ok(fresh);
      const [lateInBatch, freshInBatch] = await Promise.all([
        batcher.complete(batched, 'worker-a', stalling.now(), ok),
        batcher.complete(fresh, 'worker-a', stalling.now(), ok),
      ]);
      assert.equal(lateInBatch.recorded, false, 'a late completion (in a batch) is refused');
      assert.equal(freshInBatch.recorded, true, 'the current attempt beside it is recorded');
      const rows = await deliveriesOf(first, sub.id);
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.deepEqual([byId.get(alone.id)?.status, byId.get(alone.id)?.attempt_count], ['succeeded', 2]);
      assert.deepEqual(
        [byId.get(batched.id)?.status, byId.get(batched.id)?.attempt_count, byId.get(batched.id)?.lease_owner],
        ['attempting', 1, 'worker-a'],
        'the re-claimed delivery is still leased for its new attempt',
      );
      const attempts = await attemptsOf(first, [alone.id, batched.id]);
      assert.deepEqual(
        attempts.map((a) => [a.delivery_id, a.number, a.status_code]),
        [
          [alone.id, 1, 500],
          [alone.id, 2, 200],
          [batched.id, 1, 500],
        ].sort((x, y) => String(x[0]).localeCompare(String(y[0])) || Number(x[1]) - Number(y[1])),
      );
      await receiver.close();
    });
  });
}
