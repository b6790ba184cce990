import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { jsonValidator } from '../../src/http/validation.js';
import { EVENT_SCHEMAS } from '../../src/modules/events/schemas.js';
import { expectError, testedDialects } from '../helpers.js';
import { firePartnerApproved } from './harness.js';
import { createOpsEnv, type OpsEnv, received } from './ops.js';

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('WEBHOOK_DISABLE_AFTER', () => {
  it('defaults to 5 days and 20 deliveries, takes "<duration>,<count>" or off, and refuses anything else', () => {
    assert.deepEqual(loadConfig({}).webhookDisableAfter, { ms: 5 * 86_400_000, deliveries: 20 });
    assert.deepEqual(loadConfig({ WEBHOOK_DISABLE_AFTER: '2d,10' }).webhookDisableAfter, {
      ms: 2 * 86_400_000,
      deliveries: 10,
    });
    assert.equal(loadConfig({ WEBHOOK_DISABLE_AFTER: 'off' }).webhookDisableAfter, null);
    for (const bad of ['5d', '5d,0', 'soon,20', '5d,20,1', '5d,x']) {
      assert.throws(() => loadConfig({ WEBHOOK_DISABLE_AFTER: bad }), ConfigError, bad);
    }
  });
});

for (const dialect of testedDialects()) {
  // One attempt per delivery, so each failing attempt is a failed delivery; disabled after
  // every delivery failed for an hour and at least four of them.
  describe(`webhook endpoint health and auto-disable (${dialect})`, () => {
    let ops: OpsEnv;
    before(async () => {
      ops = await createOpsEnv(dialect, { env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_DISABLE_AFTER: '1h,4' } });
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    const subscription = (id: string, key?: string) =>
      ops.call('GET', `/api/public/webhooks/${id}`, 200, undefined, key);
    /** Fires one partner.approved and sends what is due. */
    const fire = async () => {
      await firePartnerApproved(ops.env);
      await ops.drain();
    };

    it('shows a new subscription as healthy: no attempts, no failures, nothing parked', async () => {
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/x',
        events: ['*'],
      });
      assert.deepEqual(sub.health, {
        successRate24h: null,
        attempts24h: 0,
        consecutiveFailures: 0,
        failingSince: null,
        lastSuccessAt: null,
        lastFailureAt: null,
        disableProgressPercent: 0,
        warning: null,
        parkedDeliveries: 0,
      });
      assert.equal(sub.disabledAt, null);
      assert.equal(sub.disabledReason, null);
    });

    it('counts failures in a row, resets them on a success, and reports the 24 h success rate', async () => {
      let ok = false;
      const r = await ops.receiver(() => ({ status: ok ? 200 : 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      const firstFailure = ops.env.clock.now();
      await fire();
      ops.env.clock.advance(MINUTE);
      await fire();
      let health = (await subscription(sub.id)).health;
      assert.equal(health.consecutiveFailures, 2);
      assert.equal(health.failingSince, iso(firstFailure));
      assert.equal(health.lastFailureAt, iso(ops.env.clock.now()));
      assert.equal(health.successRate24h, 0);
      assert.equal(health.attempts24h, 2);
      assert.equal(health.disableProgressPercent, 1, 'min(2 of 4 deliveries, 1 of 60 minutes)');
      ok = true;
      ops.env.clock.advance(MINUTE);
      await fire();
      health = (await subscription(sub.id)).health;
      assert.equal(health.consecutiveFailures, 0);
      assert.equal(health.failingSince, null);
      assert.equal(health.lastSuccessAt, iso(ops.env.clock.now()));
      assert.equal(health.lastFailureAt, iso(firstFailure + MINUTE));
      assert.equal(health.attempts24h, 3);
      assert.equal(health.successRate24h, 0.3333);
      assert.equal(health.disableProgressPercent, 0);
      ops.env.clock.advance(25 * 60 * MINUTE);
      health = (await subscription(sub.id)).health;
      assert.equal(health.attempts24h, 0, 'attempts older than 24 h no longer count');
      assert.equal(health.successRate24h, null);
    });

    it('warns at 50, 75 and 90 % and then disables, telling the other subscriptions and never itself', async () => {
      const failing = await ops.receiver(() => ({ status: 503 }));
      const watcher = await ops.receiver();
      const bystander = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: failing.url, events: ['*'] });
      await ops.call('POST', '/api/public/webhooks', 201, { url: watcher.url, events: ['webhook.*'] });
      await ops.call('POST', '/api/public/webhooks', 201, { url: bystander.url, events: ['partner.approved'] });
      const start = ops.env.clock.now();
      // Progress = min(failed deliveries / 4, time failing / 60 min).
      for (const [minutes, expected] of [
        [0, []],
        [30, [50]],
        [45, [50, 75]],
        [54, [50, 75, 90]],
      ] as const) {
        ops.env.clock.set(start + minutes * MINUTE);
        await fire();
        const warnings = received(watcher, 'webhook.subscription.failing');
        assert.deepEqual(
          warnings.map((w) => w.data.progressPercent),
          expected,
          `after the failure at ${minutes} min`,
        );
        assert.equal((await subscription(sub.id)).status, 'active');
      }
      const warning = received(watcher, 'webhook.subscription.failing')[2];
      assert.equal(warning?.data.subscriptionId, sub.id);
      assert.equal(warning?.data.url, failing.url);
      assert.equal(warning?.data.disableAfterDeliveries, 4);
      assert.equal((await subscription(sub.id)).health.warning, 90);

      ops.env.clock.set(start + 60 * MINUTE);
      await fire();
      const disabled = await subscription(sub.id);
      assert.equal(disabled.status, 'disabled');
      assert.equal(disabled.disabledAt, iso(start + 60 * MINUTE));
      assert.match(disabled.disabledReason, /failed/);
      assert.equal(disabled.health.consecutiveFailures, 5);
      const [event] = received(watcher, 'webhook.subscription.disabled');
      assert.ok(event, 'the watcher heard of the disable');
      assert.equal(event.data.subscriptionId, sub.id);
      assert.equal(event.data.disabledBy, 'automatic');
      assert.equal(event.data.status, 'disabled');
      for (const name of ['webhook.subscription.failing', 'webhook.subscription.disabled'] as const) {
        for (const sent of received(watcher, name)) {
          const validate = jsonValidator(EVENT_SCHEMAS[name]);
          assert.ok(validate(sent.data), `${name}: ${JSON.stringify(validate.errors)}`);
        }
      }
      const aboutItself = failing.requests.filter((q) => String(q.headers['x-service-event']).startsWith('webhook.'));
      assert.equal(aboutItself.length, 0, 'a subscription never hears about itself');
      assert.equal(received(bystander, 'webhook.subscription.disabled').length, 0, 'only those that chose the event');
    });

    it('counts every attempt of a batch of completions, in one hourly bucket per subscription', async () => {
      const r = await ops.receiver(() => ({ status: 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      for (let i = 0; i < 3; i++) await firePartnerApproved(ops.env);
      assert.equal(await ops.drain(), 3);
      const health = (await subscription(sub.id)).health;
      assert.equal(health.attempts24h, 3);
      assert.equal(health.consecutiveFailures, 3);
      const buckets = await ops.env.ctx.db.read
        .selectFrom('webhook_subscription_hours')
        .select(['succeeded', 'failed'])
        .where('subscription_id', '=', sub.id)
        .execute();
      assert.deepEqual(buckets, [{ succeeded: 0, failed: 3 }]);
    });

    it('never disables while the deliveries are fewer than the threshold, however long they fail', async () => {
      const r = await ops.receiver(() => ({ status: 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      for (let i = 0; i < 3; i++) {
        await fire();
        ops.env.clock.advance(10 * 60 * MINUTE);
      }
      const view = await subscription(sub.id);
      assert.equal(view.status, 'active');
      assert.equal(view.health.consecutiveFailures, 3);
      assert.equal(view.health.disableProgressPercent, 75);
    });

    it('disables and enables by hand, firing webhook.subscription.disabled with disabledBy manual', async () => {
      const watcher = await ops.receiver();
      await ops.call('POST', '/api/public/webhooks', 201, {
        url: watcher.url,
        events: ['webhook.subscription.disabled'],
      });
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/y',
        events: ['*'],
      });
      const off = await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      assert.equal(off.status, 'disabled');
      assert.equal(off.disabledAt, iso(ops.env.clock.now()));
      assert.equal(off.disabledReason, 'Disabled by hand.');
      await ops.drain();
      const [event] = received(watcher, 'webhook.subscription.disabled');
      assert.equal(event?.data.disabledBy, 'manual');
      const on = await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'enabled' });
      assert.equal(on.status, 'active');
      assert.equal(on.disabledAt, null);
      assert.equal(on.disabledReason, null);
    });

    it("answers 404 for another brand's subscription and leaves it as it was", async () => {
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/z',
        events: ['*'],
      });
      const other = await ops.env.createBrand('Other');
      const res = await ops.http.call('PATCH', `/api/public/webhooks/${sub.id}`, {
        body: { status: 'disabled' },
        key: other.apiKey,
      });
      expectError(res, 404, 'not_found');
      expectError(
        await ops.http.call('GET', `/api/public/webhooks/${sub.id}`, { key: other.apiKey }),
        404,
        'not_found',
      );
      assert.equal((await subscription(sub.id)).status, 'active');
    });
  });
}
