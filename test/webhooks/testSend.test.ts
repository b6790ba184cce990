import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { eventCatalogue } from '../../src/modules/webhooks/catalogue.js';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, Receiver, subscribe } from './harness.js';

const SECRET = 'test-send-secret';

for (const dialect of testedDialects()) {
  describe(`POST /api/public/webhooks/:id/test (${dialect})`, () => {
    let env: TestEnv;
    const receivers: Receiver[] = [];
    const receiver = async (answer?: Receiver['answer']) => {
      const started = await Receiver.start(answer);
      receivers.push(started);
      return started;
    };
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: '2s' } });
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await clearWebhooks(env);
    });
    after(() => env.close());

    it("sends the catalogue's example, signed, and answers the attempt's outcome", async () => {
      const r = await receiver(() => ({ status: 202, body: 'thanks', headers: { 'x-seen': 'yes' } }));
      const sub = await subscribe(env, { url: r.url, secret: SECRET, events: ['partner.approved'] });
      const res = await env.request('POST', `/api/public/webhooks/${sub.id}/test`, {
        body: { event: 'conversion.created' },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(r.requests.length, 1);
      const received = r.requests[0];
      assert.ok(received);
      const envelope = JSON.parse(received.body.toString('utf8'));
      const example = eventCatalogue().data.find((e) => e.name === 'conversion.created')?.example;
      assert.deepEqual(envelope.data, example?.data);
      assert.equal(envelope.event, 'conversion.created');
      assert.equal(envelope.brandId, env.brand.id);
      assert.match(envelope.id, /^evt_/);
      assert.equal(
        verifyWebhookSignature({
          secret: SECRET,
          header: received.headers['x-service-signature'],
          rawBody: received.body,
          now: env.clock.now(),
        }),
        true,
      );
      assert.equal(received.headers['x-service-event'], 'conversion.created');

      assert.equal(res.body.test, true);
      assert.equal(res.body.status, 'succeeded');
      assert.equal(res.body.subscriptionId, sub.id);
      assert.equal(res.body.eventId, envelope.id);
      assert.equal(res.body.id, received.headers['x-service-webhook-id']);
      assert.equal(res.body.requestBody, received.body.toString('utf8'));
      assert.equal(res.body.attempts.length, 1);
      const [attempt] = res.body.attempts;
      assert.equal(attempt.statusCode, 202);
      assert.equal(attempt.responseBody, 'thanks');
      assert.equal(attempt.responseHeaders['x-seen'], 'yes');
      assert.equal(attempt.requestHeaders['x-service-signature'], received.headers['x-service-signature']);
    });

    it('records the test in the delivery log, marked test, and never retries a failed one', async () => {
      const r = await receiver(() => ({ status: 500, body: 'down' }));
      const sub = await subscribe(env, { url: r.url });
      const res = await env.request('POST', `/api/public/webhooks/${sub.id}/test`, {
        body: { event: 'partner.banned' },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'failed');
      assert.equal(res.body.nextAttemptAt, null);
      assert.equal(res.body.attempts[0].statusCode, 500);

      const log = await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`);
      assert.deepEqual(
        log.body.data.map((d: { id: string; test: boolean }) => [d.id, d.test]),
        [[res.body.id, true]],
      );
      const stored = await env.request('GET', `/api/public/webhook-deliveries/${res.body.id}`);
      assert.deepEqual(stored.body, res.body);
      const event = await env.request('GET', `/api/public/events/${res.body.eventId}`);
      assert.equal(event.body.test, true);
      const events = await env.request('GET', '/api/public/events?event=partner.banned');
      assert.equal(
        events.body.data.some((e: { id: string }) => e.id === res.body.eventId),
        false,
        'a test is not one of the brand’s events',
      );

      const dispatcher = new Dispatcher(env.ctx);
      try {
        env.clock.advance(3_600_000);
        assert.equal(await dispatcher.runOnce(), 0);
      } finally {
        await dispatcher.close();
      }
      assert.equal(r.requests.length, 1);
    });

    it('answers a network error as the outcome, not as an API error', async () => {
      const r = await receiver(() => ({ reset: true }));
      const sub = await subscribe(env, { url: r.url });
      const res = await env.request('POST', `/api/public/webhooks/${sub.id}/test`, {
        body: { event: 'partner.approved' },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'failed');
      assert.equal(res.body.attempts[0].statusCode, null);
      assert.equal(typeof res.body.attempts[0].error, 'string');
      assert.equal(res.body.attempts[0].responseHeaders, null);
    });

    it('never sends a failed test again: recover leaves it out and redeliver refuses it (409)', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const sub = await subscribe(env, { url: r.url });
      const sent = await env.request('POST', `/api/public/webhooks/${sub.id}/test`, {
        body: { event: 'conversion.created' },
      });
      assert.equal(sent.body.status, 'failed', JSON.stringify(sent.body));
      const since = new Date(env.clock.now() - 60_000).toISOString();
      const dryRun = await env.request('POST', `/api/public/webhooks/${sub.id}/recover`, {
        body: { since, dryRun: true },
      });
      assert.equal(dryRun.status, 200, JSON.stringify(dryRun.body));
      assert.equal(dryRun.body.deliveries, 0, JSON.stringify(dryRun.body));
      const recovered = await env.request('POST', `/api/public/webhooks/${sub.id}/recover`, { body: { since } });
      assert.equal(recovered.body.deliveries, 0, JSON.stringify(recovered.body));
      expectError(
        await env.request('POST', `/api/public/webhook-deliveries/${sent.body.id}/redeliver`),
        409,
        'conflict',
      );
      assert.equal(r.requests.length, 1, 'the one test attempt, nothing after it');
    });

    it('validates the event and scopes the subscription to the brand', async () => {
      const r = await receiver();
      const sub = await subscribe(env, { url: r.url });
      expectError(
        await env.request('POST', `/api/public/webhooks/${sub.id}/test`, { body: { event: 'nope' } }),
        422,
        'validation_error',
      );
      expectError(
        await env.request('POST', `/api/public/webhooks/${sub.id}/test`, { body: {} }),
        422,
        'validation_error',
      );
      expectError(
        await env.request('POST', '/api/public/webhooks/sub_unknown/test', { body: { event: 'partner.approved' } }),
        404,
        'not_found',
      );
      const other = await env.createBrand('Other');
      expectError(
        await env.request('POST', `/api/public/webhooks/${sub.id}/test`, {
          key: other.apiKey,
          body: { event: 'partner.approved' },
        }),
        404,
        'not_found',
      );
      assert.equal(r.requests.length, 0);
    });
  });
}
