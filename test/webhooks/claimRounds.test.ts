/**
 * A target with a backlog in the database is claimed a round of its slots at a time: a claim
 * is a transaction, and one per finished send would make the claim, not the receiver, the
 * limit of a burst (it held PostgreSQL to ~100 deliveries/s). The claims are told apart from
 * the dispatcher's other transactions by what they answer: the deliveries to send.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { firePartnerApproved, Receiver, SystemTestClock, subscribe } from './harness.js';

const BACKLOG = 80;
const PER_TARGET = 8;

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

      // Claims are the transactions that answer with deliveries to send; their sizes are kept.
      const db = env.ctx.db;
      const transact = db.transact.bind(db);
      const claims: number[] = [];
      db.transact = async (work) => {
        const result = await transact(work);
        const first: unknown = Array.isArray(result) ? result[0] : undefined;
        if (typeof first === 'object' && first !== null && 'payload' in first)
          claims.push((result as unknown[]).length);
        return result;
      };
      const dispatcher = new Dispatcher(env.ctx, { pollMs: 50 });
      const stop = new AbortController();
      const running = dispatcher.run(stop.signal);
      try {
        await receiver.waitForRequests(BACKLOG, 20_000);
      } finally {
        stop.abort();
        await running;
        db.transact = transact;
        await receiver.close();
      }
      assert.equal(receiver.requests.length, BACKLOG);
      assert.equal(
        claims.reduce((a, b) => a + b, 0),
        BACKLOG,
        'every delivery was claimed once',
      );
      // Each claim but the last takes at least a round (the first takes two).
      assert.ok(claims.length <= BACKLOG / PER_TARGET, `claims of ${claims.join(', ')} deliveries`);
    });
  });
}
