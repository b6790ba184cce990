import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { EVENT_NAMES, eventMatches } from '../../src/modules/events/schemas.js';
import { expectError, testedDialects } from '../helpers.js';
import { fireConversionCreated, firePartnerApproved } from './harness.js';
import { createOpsEnv, type OpsEnv, received } from './ops.js';

describe('event patterns', () => {
  it('matches a name, "*" and "<group>.*", and nothing else', () => {
    assert.equal(eventMatches(['conversion.created'], 'conversion.created'), true);
    assert.equal(eventMatches(['*'], 'payout.paid'), true);
    assert.equal(eventMatches(['conversion.*'], 'conversion.rejected'), true);
    assert.equal(eventMatches(['conversion.*'], 'partner.approved'), false);
    assert.equal(eventMatches(['webhook.*'], 'webhook.subscription.disabled'), true);
    assert.equal(eventMatches(['conversion.created'], 'conversion.approved'), false);
  });
});

for (const dialect of testedDialects()) {
  describe(`webhook event filters (${dialect})`, () => {
    let ops: OpsEnv;
    before(async () => {
      ops = await createOpsEnv(dialect);
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    it('delivers every event of a group to "conversion.*" and nothing of other groups', async () => {
      const r = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['conversion.*'] });
      assert.deepEqual(sub.events, ['conversion.*']);
      await fireConversionCreated(ops.env);
      await ops.drain();
      assert.equal(received(r, 'conversion.created').length, 1);
      assert.equal(
        received(r, 'partner.approved').length,
        0,
        'partner.approved fired too but is not a conversion event',
      );
      assert.equal(r.requests.length, 1);
    });

    it('delivers every event to "*"', async () => {
      const r = await ops.receiver();
      await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['*'] });
      await fireConversionCreated(ops.env);
      await ops.drain();
      assert.equal(received(r, 'conversion.created').length, 1);
      assert.equal(received(r, 'partner.approved').length, 1);
    });

    it('accepts patterns in PATCH and applies them to the next events', async () => {
      const r = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['cap.reached'] });
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { events: ['partner.*'] });
      await firePartnerApproved(ops.env);
      await ops.drain();
      assert.equal(received(r, 'partner.approved').length, 1);
    });

    it('refuses patterns the catalogue does not know with 422', async () => {
      for (const events of [['nope.*'], ['conversion.nope'], ['*.*'], ['conversion.*.*'], ['conversion*'], []]) {
        const res = await ops.http.call('POST', '/api/public/webhooks', {
          body: { url: 'https://hooks.example/x', events },
        });
        expectError(res, 422, 'validation_error');
      }
    });

    it('lists the operational events in the public catalogue, each with a schema', async () => {
      const res = await ops.http.call('GET', '/api/public/webhook-events', { key: null });
      assert.equal(res.status, 200);
      const names = res.body.data.map((e: { name: string }) => e.name);
      assert.deepEqual(names, EVENT_NAMES);
      for (const name of ['webhook.subscription.failing', 'webhook.subscription.disabled']) {
        const entry = res.body.data.find((e: { name: string }) => e.name === name);
        assert.ok(entry, name);
        assert.equal(entry.schema.type, 'object');
        assert.ok(entry.schema.properties.subscriptionId, `${name} documents subscriptionId`);
        assert.equal(entry.example.event, name);
      }
    });
  });
}
