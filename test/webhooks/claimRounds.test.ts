/**
 * A target with a backlog in the database is claimed a round of its slots at a time: a claim
 * is a transaction, and one per finished send would make the claim, not the receiver, the
 * limit of a burst (it held PostgreSQL to ~100 deliveries/s). The claims are told apart from
 * the dispatcher's other transactions by what they answer: the deliveries to send.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { firePartnerApproved, Receiver, SystemTestClock, subscribe, whileDispatching } from './harness.js';

const BACKLOG = 80;
const PER_TARGET = 8;

/**
 * Claims are the transactions that answer with a list of deliveries to send (an empty list
 * when they found nothing); the sizes of those lists are kept.
 */
function spyOnClaims(env: TestEnv) {
  const db = env.ctx.db;
  const transact = db.transact.bind(db);
  const claims: number[] = [];
  db.transact = async (work) => {
    const result = await transact(work);
    if (Array.isArray(result)) {
      const first: unknown = result[0];
      if (result.length === 0 || (typeof first === 'object' && first !== null && 'payload' in first)) {
        claims.push(result.length);
      }
    }
    return result;
  };
  return { claims, restore: () => (db.transact = transact) };
}

for (const dialect of testedDialects()) {
  describe(`claiming a backlog (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, {
        clock: new SystemTestClock(),
        env: { WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(PER_TARGET), RATE_LIMIT_PER_MINUTE: '100000' },
      });
    });
    after(() => env.close());

    it('claims a round of a target’s slots per transaction, not one delivery per finished send', async () => {
      // Answers after pauses of different lengths, so sends finish one by one while the backlog lasts.
      const receiver = await Receiver.start((_request, index) => ({
        status: 200,
        delayMs: 2 + (index % PER_TARGET) * 3,
      }));
      await subscribe(env, { url: receiver.url });
      // No dispatcher runs yet: every delivery waits in the database, unleased.
      for (let i = 0; i < BACKLOG; i++) await firePartnerApproved(env);

      const spy = spyOnClaims(env);
      try {
        await whileDispatching(env, 50, () => receiver.waitForRequests(BACKLOG, 20_000));
      } finally {
        spy.restore();
        await receiver.close();
      }
      assert.equal(receiver.requests.length, BACKLOG);
      assert.equal(
        spy.claims.reduce((a, b) => a + b, 0),
        BACKLOG,
        'every delivery was claimed once',
      );
      // Each claim but the last takes at least a round (the first takes two). A poll (every
      // 50 ms here) may find every delivery leased and take nothing: a few such claims on a
      // busy machine, never the one-per-finished-send of the old code (27–33 claims).
      const taking = spy.claims.filter((n) => n > 0);
      assert.ok(taking.length <= BACKLOG / PER_TARGET, `claims of ${spy.claims.join(', ')} deliveries`);
      assert.ok(spy.claims.length <= BACKLOG / PER_TARGET + 4, `claims of ${spy.claims.join(', ')} deliveries`);
    });

    it('claims nothing for new deliveries of a target whose lane is full, until a round of it is free', async () => {
      // Slow answers keep the target's lane full while the events are committed.
      const receiver = await Receiver.start(() => ({ status: 200, delayMs: 100 }));
      await subscribe(env, { url: receiver.url });
      const spy = spyOnClaims(env);
      try {
        // The next poll is an hour away: every claim here was woken by a notice or a freed slot.
        await whileDispatching(env, 60 * 60_000, async () => {
          // Events committed one after another while the first are being sent: past two
          // rounds, their deliveries are left unleased and announced to the dispatcher.
          for (let i = 0; i < BACKLOG; i++) await firePartnerApproved(env);
          await receiver.waitForRequests(BACKLOG, 20_000);
        });
      } finally {
        spy.restore();
        await receiver.close();
      }
      assert.equal(receiver.requests.length, BACKLOG);
      // A claim per announced delivery would be ~BACKLOG claims, most of them taking nothing.
      const empty = spy.claims.filter((n) => n === 0).length;
      assert.ok(spy.claims.length <= BACKLOG / PER_TARGET + 2, `claims of ${spy.claims.join(', ')} deliveries`);
      assert.ok(empty <= 2, `${empty} claims took nothing`);
    });
  });
}
