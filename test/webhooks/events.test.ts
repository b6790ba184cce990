import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { type Answer, clearWebhooks, firePartnerApproved, Receiver, subscribe } from './harness.js';

const SECRET = 'events-test-secret';

for (const [index, dialect] of testedDialects().entries()) {
  describe(`events API and the complete delivery log (${dialect})`, () => {
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
      // Ids sort by time and never go back within a process (ids.ts): each suite's clock
      // starts after the previous suite's, so time windows match the ids.
      env.clock.set(Date.UTC(2027 + index, 0, 1));
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

    /** Fires partner.approved and returns its evt_ id (the newest event of that name). */
    async function fireEvent(): Promise<string> {
      await firePartnerApproved(env);
      const res = await env.request('GET', '/api/public/events?event=partner.approved&limit=1');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.length, 1);
      return res.body.data[0].id;
    }

    it('lists events newest first, filtered by name and time range, in cursor pages', async () => {
      const first = await fireEvent();
      env.clock.advance(60_000);
      const second = await fireEvent();
      env.clock.advance(60_000);
      const third = await fireEvent();

      const page1 = await env.request('GET', '/api/public/events?event=partner.approved&limit=2');
      assert.deepEqual(
        page1.body.data.map((e: { id: string }) => e.id),
        [third, second],
      );
      assert.equal(page1.body.data[0].event, 'partner.approved');
      assert.equal(page1.body.data[0].test, false);
      assert.equal(page1.body.data[0].data.status, 'active');
      const page2 = await env.request(
        'GET',
        `/api/public/events?event=partner.approved&limit=2&cursor=${page1.body.nextCursor}`,
      );
      assert.equal(page2.body.data[0].id, first);

      const secondAt = new Date(env.clock.now() - 60_000).toISOString();
      const thirdAt = new Date(env.clock.now()).toISOString();
      const window = await env.request(
        'GET',
        `/api/public/events?event=partner.approved&since=${encodeURIComponent(secondAt)}&until=${encodeURIComponent(thirdAt)}`,
      );
      assert.deepEqual(
        window.body.data.map((e: { id: string }) => e.id),
        [second],
      );

      const other = await env.request('GET', '/api/public/events?event=conversion.created');
      assert.equal(
        other.body.data.some((e: { id: string }) => [first, second, third].includes(e.id)),
        false,
      );
    });

    it('refuses an unknown event name, a bad time and an empty window with 422', async () => {
      expectError(await env.request('GET', '/api/public/events?event=nope.never'), 422, 'validation_error');
      expectError(await env.request('GET', '/api/public/events?since=yesterday'), 422, 'validation_error');
      const at = new Date(env.clock.now()).toISOString();
      expectError(
        await env.request('GET', `/api/public/events?since=${encodeURIComponent(at)}&until=${encodeURIComponent(at)}`),
        422,
        'validation_error',
      );
    });

    it("shows an event's deliveries with the URL, headers and body sent and each attempt's response", async () => {
      const r = await receiver(
        (_req, n): Answer =>
          n === 0
            ? { status: 503, body: 'busy', headers: { 'retry-after': '1', 'x-receiver': 'one' } }
            : { status: 200, body: 'ok', headers: { 'x-receiver': 'two' } },
      );
      const sub = await subscribe(env, { url: r.url, secret: SECRET });
      const eventId = await fireEvent();
      assert.equal(await dispatcher.runOnce(), 1);
      env.clock.advance(1000);
      assert.equal(await dispatcher.runOnce(), 1);

      const res = await env.request('GET', `/api/public/events/${eventId}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.id, eventId);
      assert.equal(res.body.deliveries.length, 1);
      const [delivery] = res.body.deliveries;
      assert.equal(delivery.subscriptionId, sub.id);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.test, false);
      assert.equal(delivery.requestBody, r.requests[0]?.body.toString('utf8'));
      assert.equal(delivery.attempts.length, 2);
      const [failed, succeeded] = delivery.attempts;
      assert.equal(failed.statusCode, 503);
      assert.equal(failed.responseBody, 'busy');
      assert.equal(failed.responseHeaders['x-receiver'], 'one');
      assert.equal(failed.responseHeaders['retry-after'], '1');
      assert.equal(succeeded.responseHeaders['x-receiver'], 'two');
      for (const [index, attempt] of delivery.attempts.entries()) {
        const received = r.requests[index];
        assert.ok(received);
        assert.equal(attempt.requestUrl, r.url);
        assert.equal(attempt.requestMethod, 'POST');
        assert.equal(attempt.requestHeaders['x-service-signature'], received.headers['x-service-signature']);
        assert.equal(attempt.requestHeaders['x-service-webhook-id'], delivery.id);
        assert.equal(attempt.requestHeaders['x-service-event'], 'partner.approved');
        // The logged signature verifies the logged body: the log shows exactly what was sent.
        assert.equal(
          verifyWebhookSignature({
            secret: SECRET,
            header: attempt.requestHeaders['x-service-signature'],
            rawBody: delivery.requestBody,
            now: env.clock.now(),
          }),
          true,
        );
      }
      assert.equal(JSON.stringify(res.body).includes(SECRET), false, 'the secret is never shown');

      const single = await env.request('GET', `/api/public/webhook-deliveries/${delivery.id}`);
      assert.deepEqual(single.body, delivery);
    });

    it('resends an event to a subscription: a new delivery with the same evt_ id and body', async () => {
      const before = await receiver();
      await subscribe(env, { url: before.url });
      const eventId = await fireEvent();
      await dispatcher.runOnce();
      const later = await receiver();
      const sub = await subscribe(env, { url: later.url, events: ['conversion.created'] });

      const res = await env.request('POST', `/api/public/events/${eventId}/resend`, {
        body: { subscriptionId: sub.id },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.subscriptionId, sub.id);
      assert.equal(res.body.eventId, eventId);
      assert.equal(res.body.status, 'attempting');
      assert.equal(await dispatcher.runOnce(), 1);
      assert.equal(later.requests.length, 1);
      assert.equal(later.requests[0]?.body.toString('utf8'), before.requests[0]?.body.toString('utf8'));
      assert.equal(later.requests[0]?.headers['x-service-webhook-id'], res.body.id);
      assert.notEqual(res.body.id, before.requests[0]?.headers['x-service-webhook-id']);

      const event = await env.request('GET', `/api/public/events/${eventId}`);
      assert.equal(event.body.deliveries.length, 2);
    });

    it('answers 404 for an unknown event, 422 for an unknown subscription, 409 for a disabled one', async () => {
      const eventId = await fireEvent();
      expectError(await env.request('GET', '/api/public/events/evt_01JD0000000000000000000000'), 404, 'not_found');
      expectError(
        await env.request('POST', '/api/public/events/evt_01JD0000000000000000000000/resend', {
          body: { subscriptionId: 'sub_x' },
        }),
        404,
        'not_found',
      );
      expectError(
        await env.request('POST', `/api/public/events/${eventId}/resend`, { body: { subscriptionId: 'sub_x' } }),
        422,
        'validation_error',
      );
      expectError(
        await env.request('POST', `/api/public/events/${eventId}/resend`, { body: {} }),
        422,
        'validation_error',
      );
      const r = await receiver();
      const sub = await subscribe(env, { url: r.url });
      await env.request('PATCH', `/api/public/webhooks/${sub.id}`, { body: { status: 'disabled' } });
      expectError(
        await env.request('POST', `/api/public/events/${eventId}/resend`, { body: { subscriptionId: sub.id } }),
        409,
        'conflict',
      );
    });

    it("keeps another brand's events and subscriptions out of reach (404 / 422)", async () => {
      const other = await env.createBrand('Other');
      const eventId = await fireEvent();
      const otherList = await env.request('GET', '/api/public/events', { key: other.apiKey });
      assert.equal(otherList.status, 200);
      assert.equal(
        otherList.body.data.some((e: { id: string }) => e.id === eventId),
        false,
      );
      expectError(await env.request('GET', `/api/public/events/${eventId}`, { key: other.apiKey }), 404, 'not_found');
      const r = await receiver();
      const otherSub = await subscribe(env, { url: r.url }, other.apiKey);
      expectError(
        await env.request('POST', `/api/public/events/${eventId}/resend`, { body: { subscriptionId: otherSub.id } }),
        422,
        'validation_error',
      );
      expectError(
        await env.request('POST', `/api/public/events/${eventId}/resend`, {
          key: other.apiKey,
          body: { subscriptionId: otherSub.id },
        }),
        404,
        'not_found',
      );
    });

    it('keeps a deleted subscription’s delivery history readable (soft delete)', async () => {
      const r = await receiver();
      const sub = await subscribe(env, { url: r.url });
      const eventId = await fireEvent();
      await dispatcher.runOnce();
      const [delivery] = (await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data;
      assert.ok(delivery);

      assert.equal((await env.request('DELETE', `/api/public/webhooks/${sub.id}`)).status, 204);
      expectError(await env.request('GET', `/api/public/webhooks/${sub.id}`), 404, 'not_found');
      const list = await env.request('GET', '/api/public/webhooks');
      assert.equal(
        list.body.data.some((s: { id: string }) => s.id === sub.id),
        false,
      );

      const log = await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`);
      assert.deepEqual(
        log.body.data.map((d: { id: string }) => d.id),
        [delivery.id],
      );
      const single = await env.request('GET', `/api/public/webhook-deliveries/${delivery.id}`);
      assert.equal(single.status, 200);
      assert.equal(single.body.attempts.length, 1);
      const event = await env.request('GET', `/api/public/events/${eventId}`);
      assert.equal(event.body.deliveries[0].id, delivery.id);

      // No new deliveries for it, and nothing waits for it.
      await fireEvent();
      assert.equal((await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data.length, 1);
    });

    it('ends the unfinished deliveries of a deleted subscription', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const sub = await subscribe(env, { url: r.url });
      await fireEvent();
      await dispatcher.runOnce();
      const [waiting] = (await env.request('GET', `/api/public/webhooks/${sub.id}/deliveries`)).body.data;
      assert.equal(waiting.status, 'retry_scheduled');
      await env.request('DELETE', `/api/public/webhooks/${sub.id}`);
      env.clock.advance(60_000);
      assert.equal(await dispatcher.runOnce(), 0);
      const after = await env.request('GET', `/api/public/webhook-deliveries/${waiting.id}`);
      assert.equal(after.body.status, 'failed');
      assert.equal(after.body.nextAttemptAt, null);
    });
  });
}
