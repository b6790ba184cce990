/**
 * Deleting a partner's postback URL ends what was queued for it exactly as deleting a webhook
 * subscription does (the engine's removal, deliveries/removal.ts): waiting deliveries end
 * `failed`, an attempt in flight is recorded without a further retry, a redelivery is 409,
 * and a delivery left to a worker that died with it in flight is ended by the next claim.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { DEAD_AFTER_MS } from '../../src/modules/deliveries/heartbeat.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { Receiver } from '../receiver.js';
import { leaseToDyingWorker } from '../webhooks/harness.js';

/** Long enough to delete the template while the receiver holds its answer back. */
const ANSWER_DELAY_MS = 500;
const HOUR = 3_600_000;

for (const dialect of testedDialects()) {
  describe(`deleting a partner postback URL (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    const receivers: Receiver[] = [];
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: '5s' } });
      dispatcher = new Dispatcher(env.ctx);
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
    });
    after(async () => {
      await dispatcher.close();
      await env.close();
    });

    async function created(path: string, body: Record<string, unknown>) {
      const res = await env.request('POST', path, { body });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    }
    /** A partner with one postback URL on `receiver` and one conversion queued for it. */
    async function queuedPostback(receiver: Receiver) {
      const offer = await created('/api/v1/offers', {
        name: 'O',
        destinationUrl: 'https://shop.example/',
        payoutCents: 600,
      });
      const partner = await created('/api/v1/partners', { name: 'P', email: 'p@example.com' });
      const template = await created(`/api/v1/partners/${partner.id}/postbacks`, {
        url: `${receiver.origin}/pb?x={payout}`,
        events: ['conversion.created'],
      });
      await created('/api/v1/conversions', { offerId: offer.id, partnerId: partner.id });
      const path = `/api/v1/partners/${partner.id}/postbacks/${template.id}`;
      return { template, deleteIt: async () => assert.equal((await env.request('DELETE', path)).status, 204) };
    }
    const deliveryOf = async (templateId: string) => {
      const rows = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('subscription_id', '=', templateId)
        .execute();
      assert.equal(rows.length, 1);
      const res = await env.request('GET', `/api/public/webhook-deliveries/${rows[0]?.id}`);
      assert.equal(res.status, 200);
      return res.body;
    };
    const receiver = async (answer: Receiver['answer']) => {
      const r = await Receiver.start(answer);
      receivers.push(r);
      return r;
    };

    it('ends a delivery waiting for its retry as failed, sends nothing more, and refuses to redeliver it with 409', async () => {
      const r = await receiver(() => ({ status: 503 }));
      const { template, deleteIt } = await queuedPostback(r);
      assert.equal(await dispatcher.runOnce(), 1);
      assert.equal((await deliveryOf(template.id)).status, 'retry_scheduled');
      await deleteIt();
      const delivery = await deliveryOf(template.id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.nextAttemptAt, null);
      assert.equal(delivery.attemptCount, 1);
      env.clock.advance(HOUR);
      assert.equal(await dispatcher.runOnce(), 0);
      const refused = await env.request('POST', `/api/public/webhook-deliveries/${delivery.id}/redeliver`);
      assert.match(expectError(refused, 409, 'conflict').message, /postback URL was deleted/);
      assert.equal(await dispatcher.runOnce(), 0);
      assert.equal(r.requests.length, 1, 'nothing is sent to a deleted postback URL');
    });

    it('records an attempt in flight at the delete, and ends its delivery failed with no retry', async () => {
      const r = await receiver(() => ({ status: 500, delayMs: ANSWER_DELAY_MS }));
      const { template, deleteIt } = await queuedPostback(r);
      const sending = dispatcher.runOnce();
      await r.waitForRequests(1);
      assert.equal(r.pending, 1, 'the answer is still held back');
      await deleteIt();
      await sending;
      const delivery = await deliveryOf(template.id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.nextAttemptAt, null);
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 500);
      env.clock.advance(HOUR);
      assert.equal(await dispatcher.runOnce(), 0);
      assert.equal(r.requests.length, 1);
    });

    it('ends, at the next claim, a delivery left to a worker that died before recording its attempt', async () => {
      const r = await receiver(() => ({ status: 200 }));
      const { template, deleteIt } = await queuedPostback(r);
      await leaseToDyingWorker(env, template.id);
      await deleteIt();
      assert.equal((await deliveryOf(template.id)).status, 'attempting', 'left to its living worker');
      env.clock.advance(DEAD_AFTER_MS + 1);
      assert.equal(await dispatcher.runOnce(), 0, 'not sent again once its worker is dead');
      assert.equal((await deliveryOf(template.id)).status, 'failed');
      assert.equal(r.requests.length, 0);
      await env.ctx.db.transact((trx) => trx.deleteFrom('delivery_workers').where('id', '=', 'wkr_dying').execute());
    });
  });
}
