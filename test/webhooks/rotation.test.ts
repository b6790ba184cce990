import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { computeSignature, verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { expectError, testedDialects } from '../helpers.js';
import { firePartnerApproved, type ReceivedRequest } from './harness.js';
import { createOpsEnv, type OpsEnv } from './ops.js';

const OLD = 'whsec_old_secret_0001';
const NEW = 'whsec_new_secret_0002';
const DAY = 86_400_000;
// Stripe's own verifier (its library is a client of the same t=…,v1=… scheme); no API calls.
const stripe = new Stripe('sk_test_not_used_for_requests');

for (const dialect of testedDialects()) {
  describe(`signing secret rotation (${dialect})`, () => {
    let ops: OpsEnv;
    before(async () => {
      ops = await createOpsEnv(dialect);
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    const header = (q: ReceivedRequest | undefined) => String(q?.headers['x-service-signature']);
    const v1s = (q: ReceivedRequest | undefined) =>
      header(q)
        .split(',')
        .filter((p) => p.startsWith('v1='));
    /** Both verifiers, at the test clock's time. */
    const verifies = (q: ReceivedRequest | undefined, secret: string): { ours: boolean; stripe: boolean } => {
      const body = q?.body ?? Buffer.alloc(0);
      const now = ops.env.clock.now();
      let ours = true;
      let theirs = true;
      try {
        verifyWebhookSignature({ secret, header: header(q), rawBody: body, now });
      } catch {
        ours = false;
      }
      try {
        stripe.webhooks.constructEvent(body, header(q), secret, 300, undefined, Math.floor(now / 1000));
      } catch {
        theirs = false;
      }
      return { ours, stripe: theirs };
    };
    const both = { ours: true, stripe: true };
    const neither = { ours: false, stripe: false };

    async function signedSubscription() {
      const r = await ops.receiver();
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: r.url,
        events: ['partner.approved'],
        secret: OLD,
      });
      return { r, sub };
    }
    const deliverOne = async () => {
      await firePartnerApproved(ops.env);
      await ops.drain();
    };

    it('signs with the new and the old secret until the old one expires, t=…,v1=<new>,v1=<old>', async () => {
      const { r, sub } = await signedSubscription();
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      assert.equal(res.secret, NEW);
      assert.equal(res.previousSecretExpiresAt, new Date(ops.env.clock.now() + DAY).toISOString());
      assert.equal(res.subscription.previousSecretExpiresAt, res.previousSecretExpiresAt);
      assert.equal(res.subscription.hasSecret, true);
      await deliverOne();
      const [q] = r.requests;
      assert.match(header(q), /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      assert.deepEqual(verifies(q, NEW), both, 'the new secret verifies');
      assert.deepEqual(verifies(q, OLD), both, 'the old secret verifies');
      assert.deepEqual(verifies(q, 'whsec_somebody_else'), neither);
      const t = Number(header(q).split(',')[0]?.slice(2));
      assert.deepEqual(v1s(q), [
        `v1=${computeSignature(NEW, t, q?.body ?? '')}`,
        `v1=${computeSignature(OLD, t, q?.body ?? '')}`,
      ]);
    });

    it("sends a rotation's two-signature header in the form the OpenAPI webhooks section documents", async () => {
      const { r, sub } = await signedSubscription();
      await deliverOne();
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      await deliverOne();
      assert.equal(v1s(r.requests[1]).length, 2);
      const doc = (await ops.env.request('GET', '/api/v1/openapi.json', { key: null })).body;
      const parameter = doc.webhooks['partner.approved'].post.parameters.find(
        (p: { name: string }) => p.name === 'X-Service-Signature',
      );
      // The way a receiver's OpenAPI request validator reads it (JSON Schema pattern = ECMA-262, unanchored).
      const pattern = new RegExp(parameter.schema.pattern, 'u');
      for (const q of r.requests) assert.match(header(q), pattern);
      assert.doesNotMatch(`${header(r.requests[1])},`, pattern);
      assert.match(parameter.description, /v1=<new>,v1=<old>|second `v1`/);
    });

    it('drops the old signature once previousSecretExpiresIn has passed', async () => {
      const { r, sub } = await signedSubscription();
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, {
        secret: NEW,
        previousSecretExpiresIn: 60,
      });
      ops.env.clock.advance(59_999);
      await deliverOne();
      assert.equal(v1s(r.requests[0]).length, 2, 'still both 1 ms before expiry');
      ops.env.clock.advance(1);
      await deliverOne();
      const last = r.requests[1];
      assert.equal(v1s(last).length, 1);
      assert.deepEqual(verifies(last, NEW), both);
      assert.deepEqual(verifies(last, OLD), neither);
      const view = await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200);
      assert.equal(view.previousSecretExpiresAt, new Date(ops.env.clock.now()).toISOString());
    });

    it('generates a secret when none is given, shows it once, and never again', async () => {
      const { r, sub } = await signedSubscription();
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, {});
      assert.match(res.secret, /^whsec_[A-Za-z0-9_-]{40,}$/);
      const shown = JSON.stringify([
        await ops.call('GET', `/api/public/webhooks/${sub.id}`, 200),
        await ops.call('GET', '/api/public/webhooks', 200),
      ]);
      assert.ok(!shown.includes(res.secret) && !shown.includes(OLD), 'no secret in later answers');
      await deliverOne();
      assert.deepEqual(verifies(r.requests[0], res.secret), both);
      assert.ok(!ops.env.logs.join('').includes(res.secret), 'no secret in the logs');
    });

    it('switches at once with previousSecretExpiresIn 0, and keeps no old secret when there was none', async () => {
      const { r, sub } = await signedSubscription();
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, {
        secret: NEW,
        previousSecretExpiresIn: 0,
      });
      assert.equal(res.previousSecretExpiresAt, null);
      const unsigned = await ops.call('POST', '/api/public/webhooks', 201, {
        url: r.url,
        events: ['partner.approved'],
      });
      const first = await ops.call('POST', `/api/public/webhooks/${unsigned.id}/rotate-secret`, 200, { secret: OLD });
      assert.equal(first.previousSecretExpiresAt, null);
      assert.equal(first.subscription.hasSecret, true);
      await deliverOne();
      assert.equal(r.requests.length, 2);
      const bySecret = r.requests.map((q) => [verifies(q, NEW).ours, verifies(q, OLD).ours, v1s(q).length]);
      assert.deepEqual(bySecret.sort(), [
        [false, true, 1],
        [true, false, 1],
      ]);
    });

    it('keeps the original secret signing until the time its rotation promised when a second rotation comes within it', async () => {
      const THIRD = 'whsec_third_secret_3';
      const { r, sub } = await signedSubscription();
      const first = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      const originalUntil = Date.parse(first.previousSecretExpiresAt);
      ops.env.clock.advance(60_000);
      const second = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, {
        secret: THIRD,
        previousSecretExpiresIn: 3600,
      });
      assert.equal(second.previousSecretExpiresAt, new Date(ops.env.clock.now() + 3_600_000).toISOString());
      // The later of the two times: until then an earlier secret still signs.
      assert.equal(second.subscription.previousSecretExpiresAt, new Date(originalUntil).toISOString());
      await deliverOne();
      const q = r.requests[0];
      const t = Number(header(q).split(',')[0]?.slice(2));
      assert.deepEqual(
        v1s(q),
        [THIRD, NEW, OLD].map((secret) => `v1=${computeSignature(secret, t, q?.body ?? '')}`),
        'newest first, then each earlier secret still promised',
      );
      for (const secret of [THIRD, NEW, OLD]) assert.deepEqual(verifies(q, secret), both, secret);

      // A fourth secret would break a promise (or lengthen every header): refused, nothing changed.
      const refused = await ops.http.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, {
        body: { secret: 'whsec_fourth_secret_4' },
      });
      assert.match(expectError(refused, 409, 'conflict').message, /3 secrets/);
      await deliverOne();
      assert.equal(v1s(r.requests[1]).length, 3);
      assert.deepEqual(verifies(r.requests[1], OLD), both);

      // Each stops on its own time: the second's old secret (NEW) after an hour, the original after a day.
      ops.env.clock.advance(3_600_000);
      await deliverOne();
      assert.deepEqual(verifies(r.requests[2], NEW), neither);
      assert.deepEqual(verifies(r.requests[2], OLD), both);
      ops.env.clock.set(originalUntil);
      await deliverOne();
      assert.equal(v1s(r.requests[3]).length, 1);
      assert.deepEqual(verifies(r.requests[3], OLD), neither);
      assert.deepEqual(verifies(r.requests[3], THIRD), both);
      // With the original expired there is room again.
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: 'whsec_fourth_secret_4' });
    });

    it('allows a rotation with previousSecretExpiresIn 0 while two earlier secrets sign: the current one stops at once', async () => {
      const { r, sub } = await signedSubscription();
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: 'whsec_third_secret_3' });
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, {
        secret: 'whsec_fourth_secret_4',
        previousSecretExpiresIn: 0,
      });
      assert.equal(res.previousSecretExpiresAt, null);
      await deliverOne();
      const q = r.requests[0];
      assert.equal(v1s(q).length, 3);
      for (const secret of ['whsec_fourth_secret_4', NEW, OLD]) assert.deepEqual(verifies(q, secret), both, secret);
      assert.deepEqual(verifies(q, 'whsec_third_secret_3'), neither);
    });

    it('refuses bad input with 422 and other brands’ subscriptions with 404', async () => {
      const { sub } = await signedSubscription();
      for (const body of [
        { secret: 'short' },
        { secret: 123 },
        { previousSecretExpiresIn: -1 },
        { previousSecretExpiresIn: 7 * 86_400 + 1 },
        { previousSecretExpiresIn: '60' },
        { secret: NEW, extra: true },
        { secret: OLD },
      ]) {
        expectError(
          await ops.http.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, { body }),
          422,
          'validation_error',
        );
      }
      const other = await ops.env.createBrand('Other');
      expectError(
        await ops.http.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, { body: {}, key: other.apiKey }),
        404,
        'not_found',
      );
    });

    it('ends a rotation when a secret is set outright with PATCH', async () => {
      const { r, sub } = await signedSubscription();
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      const patched = await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, {
        secret: 'whsec_third_secret_3',
      });
      assert.equal(patched.previousSecretExpiresAt, null);
      await ops.call('POST', `/api/public/webhooks/${sub.id}/rotate-secret`, 200, { secret: NEW });
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { secret: 'whsec_third_secret_3' });
      await deliverOne();
      assert.equal(v1s(r.requests[0]).length, 1);
      assert.deepEqual(verifies(r.requests[0], 'whsec_third_secret_3'), both);
    });
  });
}
