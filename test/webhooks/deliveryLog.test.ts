import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { Sender } from '../../src/modules/deliveries/sender.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, subscribe } from './harness.js';

/** Spec section 6: 1 s, 5 s, 30 s, 5 min, 30 min, 2 h; with six attempts the first five are used. */
const DELAYS_MS = [1000, 5000, 30_000, 300_000, 1_800_000];
const LONGEST_DELAY_MS = 7_200_000;
const iso = (ms: number) => new Date(ms).toISOString();
/** A response body larger than the 16 KiB the log keeps, with no repeating period that could hide an off-by-one. */
const BIG_BODY = Array.from({ length: 4000 }, (_, i) => `${i},`).join('');

describe('webhook delivery defaults', () => {
  it('uses the spec limits when nothing is configured: 10 s time-out, six attempts, 1s…2h delays', () => {
    const config = loadConfig({});
    assert.equal(config.webhookTimeoutMs, 10_000);
    assert.equal(config.webhookMaxAttempts, 6);
    assert.deepEqual(config.webhookRetryDelaysMs, [...DELAYS_MS, LONGEST_DELAY_MS]);
    assert.equal(config.webhookAllowPrivateNetworks, false);
  });
});

for (const dialect of testedDialects()) {
  describe(`webhook retry schedule and delivery log (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    const receivers: Receiver[] = [];
    const receiver = async (answer?: Receiver['answer']) => {
      const started = await Receiver.start(answer);
      receivers.push(started);
      return started;
    };
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: '2s' } });
      dispatcher = new Dispatcher(env.ctx);
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await clearWebhooks(env);
    });
    after(async () => {
      await dispatcher.close();
      await env.close();
    });

    const getDelivery = async (id: string, key?: string) => {
      const res = await env.request('GET', `/api/public/webhook-deliveries/${id}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    };
    /** Subscribes a receiver, fires one event and returns the id of its delivery. */
    async function oneDelivery(r: Receiver, secret?: string): Promise<{ subscriptionId: string; id: string }> {
      const sub = await subscribe(env, { url: r.url, secret });
      await firePartnerApproved(env);
      const [row] = await deliveriesOf(env, sub.id);
      assert.ok(row);
      return { subscriptionId: sub.id, id: row.id };
    }
    /** Runs attempts, moving the clock past every delay, until nothing more is due. */
    async function runToTheEnd(): Promise<number> {
      let attempts = 0;
      for (let round = 0; round < 20; round++) {
        const made = await dispatcher.runOnce();
        attempts += made;
        if (made === 0 && round > 0) return attempts;
        env.clock.advance(LONGEST_DELAY_MS);
      }
      return attempts;
    }

    it('waits 1 s, 5 s, 30 s, 5 min and 30 min between attempts: not due 1 ms early, due exactly on time', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const { id } = await oneDelivery(r);
      const attemptTimes = [env.clock.now()];
      assert.equal(await dispatcher.runOnce(), 1, 'attempt 1 goes out at once');
      for (const [index, delay] of DELAYS_MS.entries()) {
        const before = await getDelivery(id);
        assert.equal(before.status, 'retry_scheduled');
        assert.equal(before.nextAttemptAt, iso(env.clock.now() + delay));
        env.clock.advance(delay - 1);
        assert.equal(await dispatcher.runOnce(), 0, `attempt ${index + 2} is not due ${delay - 1} ms after`);
        env.clock.advance(1);
        attemptTimes.push(env.clock.now());
        assert.equal(await dispatcher.runOnce(), 1, `attempt ${index + 2} is due ${delay} ms after`);
      }
      const delivery = await getDelivery(id);
      assert.deepEqual(
        delivery.attempts.map((a: { attemptedAt: string }) => a.attemptedAt),
        attemptTimes.map(iso),
      );
      assert.equal(r.requests.length, 6);
    });

    it('marks the delivery failed after exactly six attempts and never makes a seventh', async () => {
      const r = await receiver(() => ({ status: 503 }));
      const { id, subscriptionId } = await oneDelivery(r);
      assert.equal(await runToTheEnd(), 6);
      env.clock.advance(10 * LONGEST_DELAY_MS);
      assert.equal(await dispatcher.runOnce(), 0);
      assert.equal(r.requests.length, 6);
      const delivery = await getDelivery(id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attemptCount, 6);
      assert.equal(delivery.nextAttemptAt, null);
      assert.deepEqual(
        delivery.attempts.map((a: { number: number }) => a.number),
        [1, 2, 3, 4, 5, 6],
      );
      const failed = await env.request('GET', `/api/public/webhooks/${subscriptionId}/deliveries?status=failed`);
      assert.deepEqual(
        failed.body.data.map((d: { id: string }) => d.id),
        [id],
      );
    });

    it('sends the same evt_ id, wh_ id and body bytes on every attempt, re-signed each time', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const { id } = await oneDelivery(r, 'whsec_same_body_secret');
      await runToTheEnd();
      assert.equal(r.requests.length, 6);
      const [first, ...rest] = r.requests;
      assert.ok(first);
      const eventId = JSON.parse(first.body.toString('utf8')).id;
      assert.match(eventId, /^evt_/);
      for (const request of rest) {
        assert.ok(request.body.equals(first.body), 'identical body bytes');
        assert.equal(request.headers['x-service-webhook-id'], id);
        assert.equal(JSON.parse(request.body.toString('utf8')).id, eventId);
      }
      assert.equal(new Set(r.headerValues('x-service-signature')).size, 6, 't moves with each attempt');
    });

    it('logs every attempt with number, time, status code, latency, the first 16 KiB of the body, and error text', async () => {
      assert.ok(BIG_BODY.length > 16 * 1024 + 100);
      const answers: Receiver['answer'][] = [
        () => ({ status: 500, body: BIG_BODY }),
        () => ({ hang: true }),
        () => ({ reset: true }),
        () => ({ status: 200, body: 'thanks' }),
      ];
      const r = await receiver((request, index) => (answers[index] ?? answers[3])?.(request, index) ?? { status: 200 });
      const { id } = await oneDelivery(r);
      // The hanging attempt goes through a sender with a 200 ms time-out, so the test stays fast.
      const impatient = new Dispatcher(env.ctx, { sender: new Sender(200, true) });
      const times: number[] = [];
      try {
        for (const [index, delay] of [0, 1000, 5000, 30_000].entries()) {
          env.clock.advance(delay);
          times.push(env.clock.now());
          assert.equal(await (index === 1 ? impatient : dispatcher).runOnce(), 1);
        }
      } finally {
        await impatient.close();
      }
      const delivery = await getDelivery(id);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attemptCount, 4);
      const [big, timedOut, reset, ok] = delivery.attempts;
      for (const [index, attempt] of delivery.attempts.entries()) {
        assert.deepEqual(Object.keys(attempt).sort(), [
          'attemptedAt',
          'error',
          'latencyMs',
          'number',
          'requestHeaders',
          'requestMethod',
          'requestUrl',
          'responseBody',
          'responseHeaders',
          'statusCode',
        ]);
        assert.equal(attempt.number, index + 1);
        assert.equal(attempt.attemptedAt, iso(times[index] ?? 0));
        assert.ok(Number.isInteger(attempt.latencyMs) && attempt.latencyMs >= 0);
      }
      assert.equal(big.statusCode, 500);
      assert.equal(big.responseBody, BIG_BODY.slice(0, 16 * 1024));
      assert.equal(big.error, null);
      assert.equal(timedOut.statusCode, null);
      assert.equal(timedOut.responseBody, null);
      assert.match(timedOut.error, /time/i);
      assert.ok(timedOut.latencyMs >= 150, `time-out latency ${timedOut.latencyMs}`);
      assert.equal(reset.statusCode, null);
      assert.equal(typeof reset.error, 'string');
      assert.ok(reset.error.length > 0);
      assert.deepEqual(
        { statusCode: ok.statusCode, responseBody: ok.responseBody, error: ok.error },
        { statusCode: 200, responseBody: 'thanks', error: null },
      );
    });

    it("lists a subscription's deliveries newest first, filtered by status and paged", async () => {
      const r = await receiver((_request, index) => ({ status: index === 1 ? 500 : 200 }));
      const sub = await subscribe(env, { url: r.url });
      for (let i = 0; i < 3; i++) {
        env.clock.advance(1);
        await firePartnerApproved(env);
        assert.equal(await dispatcher.runOnce(), 1);
      }
      const ids = (await deliveriesOf(env, sub.id)).map((d) => d.id);
      const base = `/api/public/webhooks/${sub.id}/deliveries`;
      const all = await env.request('GET', base);
      assert.equal(all.status, 200);
      assert.deepEqual(
        all.body.data.map((d: { id: string }) => d.id),
        [...ids].reverse(),
      );
      for (const d of all.body.data) {
        assert.equal(d.subscriptionId, sub.id);
        assert.equal(d.event, 'partner.approved');
        assert.match(d.eventId, /^evt_/);
      }
      const page = async (query: string) => (await env.request('GET', `${base}?${query}`)).body;
      const succeeded = await page('status=succeeded');
      assert.deepEqual(
        succeeded.data.map((d: { id: string }) => d.id),
        [ids[2], ids[0]],
      );
      const retrying = await page('status=retry_scheduled');
      assert.deepEqual(
        retrying.data.map((d: { id: string; status: string }) => [d.id, d.status]),
        [[ids[1], 'retry_scheduled']],
      );
      assert.deepEqual((await page('status=failed')).data, []);
      const first = await page('limit=2');
      assert.deepEqual(
        first.data.map((d: { id: string }) => d.id),
        [ids[2], ids[1]],
      );
      const second = await page(`limit=2&cursor=${first.nextCursor}`);
      assert.deepEqual(
        second.data.map((d: { id: string }) => d.id),
        [ids[0]],
      );
      assert.equal(second.nextCursor, null);
      expectError(await env.request('GET', `${base}?status=lost`), 422, 'validation_error');
    });

    it('redelivers a failed delivery with the same wh_ id, evt_ id and body, continuing the attempt numbers', async () => {
      let healthy = false;
      const r = await receiver(() => ({ status: healthy ? 200 : 500 }));
      const { id } = await oneDelivery(r);
      await runToTheEnd();
      assert.equal((await getDelivery(id)).status, 'failed');
      healthy = true;
      const res = await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`);
      assert.equal(res.status, 200);
      assert.equal(res.body.id, id);
      assert.equal(res.body.status, 'attempting');
      assert.equal(res.body.nextAttemptAt, iso(env.clock.now()));
      assert.equal(await dispatcher.runOnce(), 1);
      assert.equal(r.requests.length, 7);
      const [first, last] = [r.requests[0], r.requests[6]];
      assert.ok(first && last);
      assert.ok(last.body.equals(first.body));
      assert.equal(last.headers['x-service-webhook-id'], id);
      const delivery = await getDelivery(id);
      assert.equal(delivery.status, 'succeeded');
      assert.deepEqual(
        delivery.attempts.map((a: { number: number }) => a.number),
        [1, 2, 3, 4, 5, 6, 7],
      );
    });

    it('makes exactly one attempt when a failed delivery is redelivered and it fails again', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const { id } = await oneDelivery(r);
      await runToTheEnd();
      assert.equal((await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`)).status, 200);
      assert.equal(await dispatcher.runOnce(), 1);
      const after = await getDelivery(id);
      assert.equal(after.status, 'failed');
      assert.equal(after.nextAttemptAt, null);
      assert.equal(after.attemptCount, 7);
      env.clock.advance(10 * LONGEST_DELAY_MS);
      assert.equal(await dispatcher.runOnce(), 0, 'no retry follows a failed redelivery');
      assert.equal(r.requests.length, 7);
    });

    it('answers 409 to redelivering a delivery not yet sent, and redelivers one waiting for a retry at once', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const { id } = await oneDelivery(r);
      expectError(await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`), 409, 'conflict');
      await dispatcher.runOnce();
      const waiting = await getDelivery(id);
      assert.equal(waiting.status, 'retry_scheduled');
      const redelivered = await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`);
      assert.equal(redelivered.status, 200, JSON.stringify(redelivered.body));
      assert.equal(await dispatcher.runOnce(), 1, 'the one extra attempt goes out now');
      const after = await getDelivery(id);
      assert.equal(after.status, 'retry_scheduled');
      assert.equal(after.nextAttemptAt, waiting.nextAttemptAt, 'the scheduled retry is kept');
      assert.equal(after.attemptCount, 2);
    });

    it('answers 409 to redelivering for a disabled subscription, saying to enable it', async () => {
      const r = await receiver();
      const { subscriptionId, id } = await oneDelivery(r);
      await dispatcher.runOnce();
      const disabled = await env.request('PATCH', `/api/public/webhooks/${subscriptionId}`, {
        body: { status: 'disabled' },
      });
      assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
      const error = expectError(
        await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`),
        409,
        'conflict',
      );
      assert.match(error.message, /disabled: enable it first/);
    });

    it('answers 409 to redelivering for a deleted subscription, saying it was deleted rather than to enable it', async () => {
      const r = await receiver();
      const { subscriptionId, id } = await oneDelivery(r);
      await dispatcher.runOnce();
      assert.equal((await env.request('DELETE', `/api/public/webhooks/${subscriptionId}`)).status, 204);
      const error = expectError(
        await env.request('POST', `/api/public/webhook-deliveries/${id}/redeliver`),
        409,
        'conflict',
      );
      assert.match(error.message, /subscription was deleted/);
      assert.match(error.message, /\/api\/public\/events\/:id\/resend/);
      assert.doesNotMatch(error.message, /enable/);
      assert.equal(await dispatcher.runOnce(), 0);
      assert.equal(r.requests.length, 1, 'nothing was sent again');
    });

    it("answers 404 for another brand's delivery and for an unknown one", async () => {
      const r = await receiver();
      const { id } = await oneDelivery(r);
      await dispatcher.runOnce();
      const other = await env.createBrand('Nosy Brand');
      for (const key of [other.apiKey, undefined]) {
        const target = key ? id : 'wh_00000000000000000000000000';
        expectError(await env.request('GET', `/api/public/webhook-deliveries/${target}`, { key }), 404, 'not_found');
        expectError(
          await env.request('POST', `/api/public/webhook-deliveries/${target}/redeliver`, { key }),
          404,
          'not_found',
        );
      }
      const list = await env.request('GET', '/api/public/webhook-deliveries', { key: other.apiKey });
      assert.deepEqual(list.body.data, []);
    });
  });
}
