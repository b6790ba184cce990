import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { expectError, testedDialects } from '../helpers.js';
import { firePartnerApproved } from './harness.js';
import { createOpsEnv, type OpsEnv } from './ops.js';

const iso = (ms: number) => new Date(ms).toISOString();
/** WEBHOOK_REPLAY_RATE in this file: parked deliveries are replayed 200 ms apart. */
const REPLAY_SPACING_MS = 200;

for (const dialect of testedDialects()) {
  describe(`parked deliveries of a disabled subscription (${dialect})`, () => {
    let ops: OpsEnv;
    before(async () => {
      ops = await createOpsEnv(dialect, { env: { WEBHOOK_REPLAY_RATE: '5' } });
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    const deliveries = async (subscriptionId: string, query = '') =>
      (await ops.call('GET', `/api/public/webhooks/${subscriptionId}/deliveries${query}`, 200)).data;

    /** A disabled subscription with `count` parked deliveries, oldest first by event id. */
    async function parked(count: number) {
      const r = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      for (let i = 0; i < count; i++) {
        await firePartnerApproved(ops.env);
        ops.env.clock.advance(1000);
      }
      assert.equal(await ops.drain(), 0, 'nothing is sent while disabled');
      const rows = (await deliveries(sub.id)).reverse();
      return { r, sub, rows };
    }

    it('keeps the events of a disabled subscription as parked deliveries, visible in the log', async () => {
      const { r, sub, rows } = await parked(3);
      assert.equal(rows.length, 3);
      for (const d of rows) {
        assert.equal(d.status, 'parked');
        assert.equal(d.nextAttemptAt, null);
        assert.equal(d.attemptCount, 0);
      }
      assert.equal((await deliveries(sub.id, '?status=parked')).length, 3);
      assert.equal((await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200)).health.parkedDeliveries, 3);
      ops.env.clock.advance(3_600_000);
      assert.equal(await ops.drain(), 0);
      assert.equal(r.requests.length, 0);
    });

    it('sends the parked deliveries on enabling, in order of creation and spaced by the replay rate', async () => {
      const { r, sub, rows } = await parked(4);
      const enabledAt = ops.env.clock.now();
      const on = await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'enabled' });
      assert.equal(on.status, 'active');
      assert.equal(on.health.parkedDeliveries, 0);
      const scheduled = (await deliveries(sub.id)).reverse();
      assert.deepEqual(
        scheduled.map((d: { id: string; nextAttemptAt: string }) => [d.id, d.nextAttemptAt]),
        rows.map((d: { id: string }, i: number) => [d.id, iso(enabledAt + i * REPLAY_SPACING_MS)]),
      );
      assert.equal(await ops.drain(), 1, 'only the first is due at once');
      for (let i = 1; i < 4; i++) {
        ops.env.clock.advance(REPLAY_SPACING_MS - 1);
        assert.equal(await ops.drain(), 0, `delivery ${i + 1} is not due early`);
        ops.env.clock.advance(1);
        assert.equal(await ops.drain(), 1, `delivery ${i + 1} is due on time`);
      }
      assert.deepEqual(
        r.requests.map((q) => q.headers['x-service-webhook-id']),
        rows.map((d: { id: string }) => d.id),
      );
      for (const d of await deliveries(sub.id)) assert.equal(d.status, 'succeeded');
    });

    it('drops the parked deliveries when enabled with discardParked, and sends only new events', async () => {
      const { r, sub } = await parked(2);
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'enabled', discardParked: true });
      assert.deepEqual(await deliveries(sub.id), []);
      assert.equal(await ops.drain(), 0);
      await firePartnerApproved(ops.env);
      assert.equal(await ops.drain(), 1);
      assert.equal(r.requests.length, 1);
    });

    it('parks again what a replay has not sent yet when the subscription is disabled at once, so discardParked drops it', async () => {
      const { r, sub, rows } = await parked(4);
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'enabled' });
      const off = await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      assert.equal(off.health.parkedDeliveries, 4);
      const listed = await deliveries(sub.id, '?status=parked');
      assert.deepEqual(listed.map((d: { id: string }) => d.id).sort(), rows.map((d: { id: string }) => d.id).sort());
      expectError(
        await ops.http.call('POST', `/api/public/webhook-deliveries/${rows[0].id}/redeliver`, {}),
        409,
        'conflict',
      );
      ops.env.clock.advance(3_600_000);
      assert.equal(await ops.drain(), 0, 'nothing is sent while disabled');
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'enabled', discardParked: true });
      assert.deepEqual(await deliveries(sub.id), []);
      assert.equal(await ops.drain(), 0);
      assert.equal(r.requests.length, 0);
    });

    it('refuses discardParked without enabling, and leaves the parked deliveries alone', async () => {
      const { sub } = await parked(1);
      for (const body of [{ discardParked: true }, { status: 'disabled', discardParked: true }]) {
        const res = await ops.http.call('PATCH', `/api/public/webhooks/${sub.id}`, { body });
        expectError(res, 422, 'validation_error');
      }
      expectError(
        await ops.http.call('PATCH', `/api/public/webhooks/${sub.id}`, {
          body: { status: 'enabled', discardParked: 'yes' },
        }),
        422,
        'validation_error',
      );
      assert.equal((await deliveries(sub.id, '?status=parked')).length, 1);
    });

    it('ends the parked deliveries of a deleted subscription as failed, and keeps them in the log', async () => {
      const { r, sub, rows } = await parked(2);
      assert.equal((await ops.http.call('DELETE', `/api/public/webhooks/${sub.id}`, {})).status, 204);
      for (const d of rows) {
        const view = await ops.call('GET', `/api/public/webhook-deliveries/${d.id}`, 200);
        assert.equal(view.status, 'failed', d.id);
        assert.equal(view.nextAttemptAt, null);
      }
      assert.deepEqual((await ops.call('GET', '/api/public/webhook-deliveries?status=parked', 200)).data, []);
      ops.env.clock.advance(3_600_000);
      assert.equal(await ops.drain(), 0);
      assert.equal(r.requests.length, 0);
    });

    it('lets retries that were waiting when the subscription was disabled go on once it is enabled', async () => {
      let ok = false;
      const r = await ops.receiver(() => ({ status: ok ? 200 : 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      await firePartnerApproved(ops.env);
      assert.equal(await ops.drain(), 1);
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      ops.env.clock.advance(60_000);
      assert.equal(await ops.drain(), 0, 'the retry waits while disabled');
      const [waiting] = await deliveries(sub.id);
      assert.equal(waiting.status, 'retry_scheduled');
      ok = true;
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'active' });
      assert.equal(await ops.drain(), 1);
      assert.equal((await deliveries(sub.id))[0].status, 'succeeded');
      assert.equal(r.requests.length, 2);
    });
  });
}
