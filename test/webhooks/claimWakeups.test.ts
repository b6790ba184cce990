/**
 * When the dispatcher claims, and when it must not: a target whose backlog waits for the
 * target itself (disabled, or rate-limited) never makes it claim in a loop; deliveries left
 * for want of global room are sent as room frees, not at the next poll; and the leases a
 * fan-out reserved are freed when its transaction fails. Every dispatcher here polls once an
 * hour, so whatever happens within the test was woken by the engine itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dialect } from '../../src/db/database.js';
import { queueDeliveries } from '../../src/modules/deliveries/fanout.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import {
  clearWebhooks,
  deliveriesOf,
  firePartnerApproved,
  Receiver,
  SystemTestClock,
  subscribe,
  whileDispatching,
} from './harness.js';

const HOUR = 60 * 60_000;

/** Counts the transactions `env` opens while `during` runs, with a dispatcher running. */
async function transactionsWhile(env: TestEnv, during: () => Promise<void>): Promise<number> {
  const db = env.ctx.db;
  const transact = db.transact.bind(db);
  let count = 0;
  db.transact = (work) => {
    count += 1;
    return transact(work);
  };
  try {
    await whileDispatching(env, HOUR, during);
  } finally {
    db.transact = transact;
  }
  return count;
}

function testEnv(dialect: Dialect, concurrency: number, perTarget: number): Promise<TestEnv> {
  return createTestEnv(dialect, {
    clock: new SystemTestClock(),
    env: {
      WEBHOOK_CONCURRENCY: String(concurrency),
      WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(perTarget),
      WEBHOOK_TIMEOUT: '1s',
      RATE_LIMIT_PER_MINUTE: '100000',
    },
  });
}

for (const dialect of testedDialects()) {
  describe(`dispatcher wake-ups: a target that waits (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await testEnv(dialect, 64, 4);
    });
    after(() => env.close());

    for (const [what, change, backlog] of [
      ['disabled', { status: 'disabled' }, 20],
      ['rate-limited', { rateLimitPerSecond: 2 }, 40],
    ] as const) {
      it(`does not claim in a loop while a ${what} target has a backlog`, async () => {
        const receiver = await Receiver.answering(200);
        try {
          const sub = await subscribe(env, { url: receiver.url });
          for (let i = 0; i < backlog; i++) await firePartnerApproved(env);
          const res = await env.request('PATCH', `/api/public/webhooks/${sub.id}`, { body: change });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const count = await transactionsWhile(env, () => sleep(1000));
          // A loop made hundreds to thousands a second; a target that waits costs a few
          // (heartbeats, a claim, the attempts a rate-limited target is allowed).
          assert.ok(count < 50, `${count} transactions in 1 s`);
        } finally {
          await receiver.close();
          await clearWebhooks(env);
        }
      });
    }
  });

  describe(`dispatcher wake-ups: global room (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      // Two global slots (two rounds: four deliveries) under a target that could take 32.
      env = await testEnv(dialect, 2, 16);
    });
    after(() => env.close());

    it('sends deliveries left for want of global room as room frees, not at the next poll', async () => {
      const receiver = await Receiver.start(() => ({ status: 200, delayMs: 150 }));
      try {
        await subscribe(env, { url: receiver.url });
        await transactionsWhile(env, async () => {
          for (let i = 0; i < 12; i++) await firePartnerApproved(env);
          await receiver.waitForRequests(12, 10_000);
        });
        assert.equal(receiver.requests.length, 12);
      } finally {
        await receiver.close();
        await clearWebhooks(env);
      }
    });

    it('frees the leases a fan-out reserved when its transaction fails', async () => {
      // Never answers: a delivery leased at creation keeps its lease while the test looks.
      const receiver = await Receiver.start(() => ({ hang: true }));
      try {
        const sub = await subscribe(env, { url: receiver.url });
        await transactionsWhile(env, async () => {
          // Each failed fan-out reserved a lease (its event does not exist); four leaked
          // reservations would fill the two rounds of global room, leaving none below.
          for (let i = 0; i < 4; i++) {
            await assert.rejects(
              env.ctx.db.transact((trx) =>
                queueDeliveries(env.ctx, trx, {
                  id: `evt_missing_${i}`,
                  type: 'partner.approved',
                  brandId: env.brand.id,
                  payload: '{}',
                  createdAt: env.clock.now(),
                  data: {},
                }),
              ),
            );
          }
          await firePartnerApproved(env);
          const [row] = await deliveriesOf(env, sub.id);
          assert.notEqual(row?.lease_owner ?? null, null, 'the new delivery was leased at creation');
        });
      } finally {
        await receiver.close();
        await clearWebhooks(env);
      }
    });
  });
}
