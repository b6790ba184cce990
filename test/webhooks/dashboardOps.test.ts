import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { type DashboardClient, signedInClient } from '../dashboard/client.js';
import { testedDialects } from '../helpers.js';
import { firePartnerApproved } from './harness.js';
import { createOpsEnv, type OpsEnv } from './ops.js';

/** The login limit's window: each test signs in afresh past it. */
const LOGIN_WINDOW_MS = 60_000;

async function flashOf(client: DashboardClient, res: { status: number; location: string | undefined }) {
  assert.equal(res.status, 303, `expected a redirect, got ${res.status}`);
  const page = await client.get(res.location as string);
  return /class="flash (?:ok|error)" role="(?:status|alert)">([^<]*)</.exec(page.body)?.[1] ?? '';
}

for (const dialect of testedDialects()) {
  describe(`webhook operations in the dashboard (${dialect})`, () => {
    let ops: OpsEnv;
    let client: DashboardClient;
    before(async () => {
      ops = await createOpsEnv(dialect, { env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_DISABLE_AFTER: '1h,2' } });
    });
    beforeEach(async () => {
      ops.env.clock.advance(LOGIN_WINDOW_MS);
      client = await signedInClient(ops.env);
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    /** A subscription that failed twice an hour apart (so it is disabled) and has `parked` parked deliveries. */
    async function disabledWithParked(parked: number) {
      let ok = false;
      const r = await ops.receiver(() => ({ status: ok ? 200 : 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      await firePartnerApproved(ops.env);
      await ops.drain();
      ops.env.clock.advance(3_600_000);
      await firePartnerApproved(ops.env);
      await ops.drain();
      for (let i = 0; i < parked; i++) await firePartnerApproved(ops.env);
      assert.equal((await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200)).status, 'disabled');
      return { r, sub, heal: () => (ok = true) };
    }

    it('shows health, the disable reason and parked deliveries on the list and the subscription page', async () => {
      const { sub } = await disabledWithParked(3);
      const list = await client.get('/dashboard/webhooks');
      assert.equal(list.status, 200);
      assert.match(list.body, /<th[^>]*>Health<\/th>/);
      assert.match(list.body, /0% ok in 24 h/);
      assert.match(list.body, /2 failed in a row/);
      assert.match(list.body, /3 parked/);
      const page = await client.get(`/dashboard/webhooks/${sub.id}`);
      assert.equal(page.status, 200);
      assert.match(page.body, /Health and operations/);
      assert.match(page.body, /Every delivery failed for 1 hour \(2 deliveries in a row\)/);
      assert.match(page.body, /0% of 2 attempts/);
      assert.match(page.body, /Enable and send 3 parked/);
      assert.match(page.body, /Enable and discard parked/);
      assert.match(page.body, /Recover failed deliveries/);
      assert.match(page.body, /Rotate secret/);
      assert.doesNotMatch(list.body, /to auto-disable/, 'a disabled subscription shows no warning');
    });

    it('keeps "*" and "<group>.*" patterns when a subscription is saved from the form', async () => {
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/patterns',
        events: ['partner.*', 'conversion.created'],
      });
      const page = await client.get(`/dashboard/webhooks/${sub.id}`);
      assert.match(page.body, /value="partner\.\*"[^>]*checked/);
      const saved = await client.post(`/dashboard/webhooks/${sub.id}`, {
        url: sub.url,
        events: ['*', 'partner.*'],
        status: 'active',
      });
      assert.equal(saved.status, 303);
      assert.deepEqual((await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200)).events, ['*', 'partner.*']);
    });

    it('sets and clears the rate limit from the form, refusing numbers outside 1–1000', async () => {
      const created = await client.post('/dashboard/webhooks', {
        url: 'https://hooks.example/limited',
        events: ['partner.approved'],
        rateLimitPerSecond: '25',
      });
      assert.equal(created.status, 200);
      const [sub] = (await ops.call('GET', '/api/public/webhooks', 200)).data;
      assert.equal(sub.rateLimitPerSecond, 25);
      assert.match((await client.get(`/dashboard/webhooks/${sub.id}`)).body, /25 per second/);
      const form = { url: sub.url, events: ['partner.approved'], status: 'active' };
      for (const bad of ['0', '1001', 'fast']) {
        const refused = await client.post(`/dashboard/webhooks/${sub.id}`, { ...form, rateLimitPerSecond: bad });
        assert.equal(refused.status, 422, bad);
        assert.match(refused.body, /id="rateLimitPerSecond-error"/);
      }
      const cleared = await client.post(`/dashboard/webhooks/${sub.id}`, { ...form, rateLimitPerSecond: '' });
      assert.equal(cleared.status, 303);
      assert.equal((await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200)).rateLimitPerSecond, null);
    });

    it('enables a subscription and sends its parked deliveries, or discards them', async () => {
      const first = await disabledWithParked(2);
      first.heal();
      const sent = await client.post(`/dashboard/webhooks/${first.sub.id}/enable`);
      assert.match(await flashOf(client, sent), /parked ones are sent in order/);
      const before = first.r.requests.length;
      await ops.drain();
      ops.env.clock.advance(1000);
      await ops.drain();
      assert.equal(first.r.requests.length - before, 2);

      const second = await disabledWithParked(2);
      const discarded = await client.post(`/dashboard/webhooks/${second.sub.id}/enable`, { discardParked: '1' });
      assert.match(await flashOf(client, discarded), /the parked ones were discarded/);
      const view = await ops.call('GET', `/api/public/webhooks/${second.sub.id}`, 200);
      assert.equal(view.status, 'active');
      assert.equal(view.health.parkedDeliveries, 0);
    });

    it('recovers failed deliveries by day, counting first on a dry run', async () => {
      const { r, sub, heal } = await disabledWithParked(0);
      await client.post(`/dashboard/webhooks/${sub.id}/enable`, { discardParked: '1' });
      heal();
      ops.env.clock.advance(1);
      const day = new Date(ops.env.clock.now()).toISOString().slice(0, 10);
      const counted = await client.post(`/dashboard/webhooks/${sub.id}/recover`, { from: day, dryRun: '1' });
      assert.equal(await flashOf(client, counted), '2 failed deliveries would be sent again.');
      const before = r.requests.length;
      const queued = await client.post(`/dashboard/webhooks/${sub.id}/recover`, { from: day, to: day });
      assert.equal(await flashOf(client, queued), '2 failed deliveries queued again, oldest first.');
      await ops.drain();
      ops.env.clock.advance(1000);
      await ops.drain();
      assert.equal(r.requests.length - before, 2);
      // A refused form is answered in place (422), the problem beside its field.
      const refused = await client.post(`/dashboard/webhooks/${sub.id}/recover`, { from: 'not a day' });
      assert.equal(refused.status, 422);
      assert.match(refused.body, /id="recover-from-error">is not a day of the calendar/);
    });

    it('rotates the secret: shown once, and both secrets sign until the old one expires', async () => {
      const r = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: r.url,
        events: ['partner.approved'],
        secret: 'whsec_dashboard_old_1',
      });
      const page = await client.post(`/dashboard/webhooks/${sub.id}/rotate`);
      assert.equal(page.status, 200);
      const secret = /id="new-secret" value="(whsec_[\w-]+)"/.exec(page.body)?.[1];
      assert.ok(secret);
      assert.match(page.body, /every delivery carries two/);
      assert.doesNotMatch((await client.get(`/dashboard/webhooks/${sub.id}`)).body, new RegExp(secret));
      await firePartnerApproved(ops.env);
      await ops.drain();
      const [q] = r.requests;
      for (const key of [secret, 'whsec_dashboard_old_1']) {
        verifyWebhookSignature({
          secret: key,
          header: q?.headers['x-service-signature'],
          rawBody: q?.body ?? '',
          now: ops.env.clock.now(),
        });
      }
    });

    it("answers 404 to another brand's subscription on every operation", async () => {
      const other = await ops.env.createBrand('Elsewhere');
      const theirs = await ops.call(
        'POST',
        '/api/public/webhooks',
        201,
        { url: 'https://hooks.example/theirs', events: ['partner.approved'] },
        other.apiKey,
      );
      for (const [action, fields] of [
        ['enable', {}],
        ['recover', { from: '2026-11-01' }],
        ['rotate', {}],
      ] as const) {
        const res = await client.post(`/dashboard/webhooks/${theirs.id}/${action}`, fields);
        assert.equal(res.status, 404, action);
      }
      const view = await ops.call('GET', `/api/public/webhooks/${theirs.id}`, 200, undefined, other.apiKey);
      assert.equal(view.previousSecretExpiresAt, null);
    });
  });
}
