/**
 * Deleting a subscription while one of its attempts is on the wire: the attempt is recorded
 * and the delivery ends as its outcome says (succeeded, or failed without a retry), while
 * deliveries that were only waiting end failed — in one process and with the delete made by
 * another process than the one sending (two apps on one database).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Database } from '../../src/db/database.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { DEAD_AFTER_MS } from '../../src/modules/deliveries/heartbeat.js';
import { finishDeliveriesOfDeleted } from '../../src/modules/webhooks/service.js';
import {
  createTestDatabase,
  createTestEnv,
  type JsonBody,
  type TestDatabase,
  type TestEnv,
  testedDialects,
} from '../helpers.js';
import { clearWebhooks, firePartnerApproved, leaseToDyingWorker, Receiver, subscribe } from './harness.js';

/** Long enough for the test to delete the subscription while the receiver holds the answer. */
const ANSWER_DELAY_MS = 500;

/**
 * Sends the subscription's one due delivery with `sender`, deletes the subscription through
 * `deleter` once the receiver has the request (before it answers), and returns the delivery
 * as the log shows it after the attempt. The receiver and dispatcher are closed by `cleanups`.
 */
async function deleteWhileInFlight(
  sender: TestEnv,
  deleter: TestEnv,
  status: number,
  cleanups: Array<() => Promise<void>>,
): Promise<{ delivery: JsonBody; receiver: Receiver; dispatcher: Dispatcher }> {
  const receiver = await Receiver.start(() => ({ status, body: `answer ${status}`, delayMs: ANSWER_DELAY_MS }));
  const sub = await subscribe(deleter, { url: receiver.url });
  await firePartnerApproved(deleter);
  const dispatcher = new Dispatcher(sender.ctx);
  cleanups.push(
    () => receiver.close(),
    () => dispatcher.close(),
  );
  const sending = dispatcher.runOnce();
  await receiver.waitForRequests(1);
  assert.equal(receiver.pending, 1, 'the answer is still held back');
  assert.equal((await deleter.request('DELETE', `/api/public/webhooks/${sub.id}`)).status, 204);
  await sending;
  const [listed] = (await deleter.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data;
  const detail = await deleter.request('GET', `/api/public/webhook-deliveries/${listed.id}`);
  assert.equal(detail.status, 200);
  return { delivery: detail.body, receiver, dispatcher };
}

for (const dialect of testedDialects()) {
  describe(`deleting a subscription while an attempt is in flight (${dialect})`, () => {
    let env: TestEnv;
    const cleanups: Array<() => Promise<void>> = [];
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: '5s' } });
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
      await clearWebhooks(env);
    });
    after(() => env.close());

    it('records the accepted attempt and ends the delivery succeeded', async () => {
      const { delivery, receiver } = await deleteWhileInFlight(env, env, 200, cleanups);
      assert.equal(receiver.requests.length, 1);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attemptCount, 1);
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 200);
      assert.equal(delivery.attempts[0].responseBody, 'answer 200');
    });

    it('records the failed attempt and ends the delivery failed, with no retry', async () => {
      const { delivery, receiver, dispatcher } = await deleteWhileInFlight(env, env, 500, cleanups);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.nextAttemptAt, null);
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 500);
      assert.equal(delivery.attempts[0].responseBody, 'answer 500');
      env.clock.advance(3_600_000);
      assert.equal(await dispatcher.runOnce(), 0);
      assert.equal(receiver.requests.length, 1, 'nothing is sent to a deleted subscription');
    });

    it('ends, at the next sweep, a delivery left to a worker that died before recording its attempt', async () => {
      const sub = await subscribe(env, { url: 'http://127.0.0.1:9/never' });
      await firePartnerApproved(env);
      await leaseToDyingWorker(env, sub.id);
      assert.equal((await env.request('DELETE', `/api/public/webhooks/${sub.id}`)).status, 204);
      const status = async () =>
        (await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data[0].status;
      assert.equal(await status(), 'attempting', 'left to its living worker');
      assert.ok((await finishDeliveriesOfDeleted(env.ctx)) >= 1);
      assert.equal(await status(), 'attempting', 'the worker is still alive');
      // The worker dies: no heartbeat, no completion.
      env.clock.advance(DEAD_AFTER_MS + 1);
      await finishDeliveriesOfDeleted(env.ctx);
      assert.equal(await status(), 'failed');
      await env.ctx.db.transact((trx) => trx.deleteFrom('delivery_workers').where('id', '=', 'wkr_dying').execute());
    });

    it('still ends a delivery that was only waiting for its retry as failed', async () => {
      const receiver = await Receiver.answering(500);
      const dispatcher = new Dispatcher(env.ctx);
      cleanups.push(
        () => receiver.close(),
        () => dispatcher.close(),
      );
      const sub = await subscribe(env, { url: receiver.url });
      await firePartnerApproved(env);
      await dispatcher.runOnce();
      assert.equal((await env.request('DELETE', `/api/public/webhooks/${sub.id}`)).status, 204);
      const [listed] = (await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data;
      assert.equal(listed.status, 'failed');
      assert.equal(listed.attemptCount, 1);
    });
  });

  describe(`deleting a subscription in one process while another sends to it (${dialect})`, () => {
    let database: TestDatabase;
    let secondDb: Database;
    let api: TestEnv;
    let worker: TestEnv;
    const cleanups: Array<() => Promise<void>> = [];
    before(async () => {
      database = await createTestDatabase(dialect);
      api = await createTestEnv(dialect, { database, env: { WEBHOOK_TIMEOUT: '5s' } });
      // A second connection pool on the same database, as a `--role worker` process has.
      secondDb = new Database({
        databaseUrl: database.url,
        dataDir: database.dataDir,
        schema: database.schema ?? undefined,
        poolSize: 5,
      });
      worker = await createTestEnv(dialect, {
        database: { ...database, db: secondDb },
        clock: api.clock,
        env: { WEBHOOK_TIMEOUT: '5s' },
      });
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
      await clearWebhooks(api);
    });
    after(async () => {
      await api.close();
      await worker.close();
      await secondDb.close();
      await database.db.close();
      await database.drop();
    });

    it("records the worker's accepted attempt and ends the delivery succeeded", async () => {
      const { delivery } = await deleteWhileInFlight(worker, api, 200, cleanups);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 200);
    });

    it("records the worker's failed attempt and ends the delivery failed, with no retry", async () => {
      const { delivery } = await deleteWhileInFlight(worker, api, 503, cleanups);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.nextAttemptAt, null);
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 503);
    });
  });
}
