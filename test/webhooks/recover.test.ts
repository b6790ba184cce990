import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { expectError, testedDialects } from '../helpers.js';
import { firePartnerApproved } from './harness.js';
import { createOpsEnv, type OpsEnv } from './ops.js';

const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;

for (const dialect of testedDialects()) {
  // Two attempts per delivery keep the failing runs short; replays go 100 ms apart.
  describe(`recovering failed deliveries and redelivering one (${dialect})`, () => {
    let ops: OpsEnv;
    before(async () => {
      ops = await createOpsEnv(dialect, {
        env: { WEBHOOK_MAX_ATTEMPTS: '2', WEBHOOK_RETRY_DELAYS: '1s', WEBHOOK_REPLAY_RATE: '10' },
      });
    });
    afterEach(() => ops.reset());
    after(() => ops.close());

    const deliveries = async (subscriptionId: string) =>
      (await ops.call('GET', `/api/public/webhooks/${subscriptionId}/deliveries`, 200)).data.reverse();
    const delivery = (id: string) => ops.call('GET', `/api/public/webhook-deliveries/${id}`, 200);
    /** Fires an event and runs its delivery to the end (failed when the receiver fails). */
    async function failOne() {
      await firePartnerApproved(ops.env);
      await ops.drain();
      ops.env.clock.advance(1000);
      await ops.drain();
    }

    /** A subscription with failed deliveries made one hour apart, from `start`. */
    async function failedHistory(count: number) {
      let healthy = false;
      const r = await ops.receiver(() => ({ status: healthy ? 200 : 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      const start = ops.env.clock.now();
      for (let i = 0; i < count; i++) {
        ops.env.clock.set(start + i * HOUR);
        await failOne();
      }
      ops.env.clock.set(start + count * HOUR);
      const rows = await deliveries(sub.id);
      for (const d of rows) assert.equal(d.status, 'failed');
      return { r, sub, rows, start, heal: () => (healthy = true) };
    }

    it('documents recover and rotate-secret in the OpenAPI document with operation ids and named schemas', async () => {
      const doc = await ops.call('GET', '/api/v1/openapi.json', 200, undefined);
      for (const [path, operationId, schema] of [
        ['/api/public/webhooks/{id}/recover', 'recoverWebhookDeliveries', 'WebhookRecovery'],
        ['/api/public/webhooks/{id}/rotate-secret', 'rotateWebhookSecret', 'WebhookSecretRotation'],
      ] as const) {
        const operation = doc.paths[path]?.post;
        assert.equal(operation?.operationId, operationId);
        assert.deepEqual(operation.tags, ['webhooks']);
        assert.equal(
          operation.responses['200'].content['application/json'].schema.$ref,
          `#/components/schemas/${schema}`,
        );
        for (const status of ['401', '404', '422', '429']) assert.ok(operation.responses[status], `${path} ${status}`);
        assert.equal(doc.components.schemas[schema].additionalProperties, false);
      }
    });

    it('counts the failed deliveries of a window on a dry run and resends nothing', async () => {
      const { r, sub, start } = await failedHistory(3);
      const sent = r.requests.length;
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/recover`, 200, {
        since: iso(start + HOUR),
        dryRun: true,
      });
      assert.deepEqual(res, {
        subscriptionId: sub.id,
        since: iso(start + HOUR),
        until: iso(ops.env.clock.now()),
        dryRun: true,
        deliveries: 2,
      });
      ops.env.clock.advance(HOUR);
      assert.equal(await ops.drain(), 0);
      assert.equal(r.requests.length, sent);
      for (const d of await deliveries(sub.id)) assert.equal(d.status, 'failed');
    });

    it('resends the failed deliveries created in [since, until), in order, with the same ids and bytes', async () => {
      const { r, sub, rows, start, heal } = await failedHistory(4);
      const firstBodies = new Map(r.requests.map((q) => [String(q.headers['x-service-webhook-id']), q.body]));
      heal();
      const res = await ops.call('POST', `/api/public/webhooks/${sub.id}/recover`, 200, {
        since: iso(start + HOUR),
        until: iso(start + 3 * HOUR),
      });
      assert.equal(res.deliveries, 2);
      assert.equal(res.dryRun, false);
      const before = r.requests.length;
      assert.equal(await ops.drain(), 1);
      ops.env.clock.advance(100);
      assert.equal(await ops.drain(), 1);
      const resent = r.requests.slice(before);
      const wanted = [rows[1].id, rows[2].id];
      assert.deepEqual(
        resent.map((q) => q.headers['x-service-webhook-id']),
        wanted,
      );
      for (const q of resent) {
        const id = String(q.headers['x-service-webhook-id']);
        assert.ok(q.body.equals(firstBodies.get(id) as Buffer), 'the same bytes as the first attempt');
      }
      const after = await deliveries(sub.id);
      assert.deepEqual(
        after.map((d: { status: string }) => d.status),
        ['failed', 'succeeded', 'succeeded', 'failed'],
      );
      const recovered = await delivery(rows[1].id);
      assert.deepEqual(
        recovered.attempts.map((a: { number: number }) => a.number),
        [1, 2, 3],
      );
    });

    it('gives each recovered delivery a fresh attempt sequence', async () => {
      const { r, sub, rows, start } = await failedHistory(1);
      await ops.call('POST', `/api/public/webhooks/${sub.id}/recover`, 200, { since: iso(start) });
      assert.equal(await ops.drain(), 1);
      assert.equal((await delivery(rows[0].id)).status, 'retry_scheduled');
      ops.env.clock.advance(1000);
      assert.equal(await ops.drain(), 1);
      const done = await delivery(rows[0].id);
      assert.equal(done.status, 'failed');
      assert.equal(done.attemptCount, 4);
      assert.equal(r.requests.length, 4);
    });

    it('refuses a window that ends before it starts, a future since and unknown fields with 422', async () => {
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/x',
        events: ['partner.approved'],
      });
      const now = ops.env.clock.now();
      for (const body of [
        { since: iso(now), until: iso(now - 1) },
        { since: iso(now + HOUR) },
        { since: 'yesterday' },
        { since: iso(now - HOUR), dryRun: 'yes' },
        { since: iso(now - HOUR), extra: 1 },
        {},
      ]) {
        expectError(
          await ops.http.call('POST', `/api/public/webhooks/${sub.id}/recover`, { body }),
          422,
          'validation_error',
        );
      }
    });

    it('answers 409 while the subscription is disabled, and 404 for another brand or an unknown id', async () => {
      const { sub, start } = await failedHistory(1);
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      const body = { since: iso(start) };
      expectError(await ops.http.call('POST', `/api/public/webhooks/${sub.id}/recover`, { body }), 409, 'conflict');
      const other = await ops.env.createBrand('Other');
      for (const [id, key] of [
        [sub.id, other.apiKey],
        ['sub_00000000000000000000000000', undefined],
      ] as const) {
        expectError(await ops.http.call('POST', `/api/public/webhooks/${id}/recover`, { body, key }), 404, 'not_found');
      }
    });

    it('redelivers once, at once, a delivery waiting for its retry; its success ends the schedule', async () => {
      let answers = 0;
      const r = await ops.receiver(() => ({ status: answers++ === 1 ? 200 : 500 }));
      const sub = await ops.call('POST', '/api/public/webhooks', 201, { url: r.url, events: ['partner.approved'] });
      await firePartnerApproved(ops.env);
      await ops.drain();
      const [row] = await deliveries(sub.id);
      assert.equal(row.status, 'retry_scheduled');
      const res = await ops.call('POST', `/api/public/webhook-deliveries/${row.id}/redeliver`, 200);
      assert.equal(res.id, row.id);
      assert.equal(await ops.drain(), 1, 'exactly one attempt, now');
      const done = await delivery(row.id);
      assert.equal(done.status, 'succeeded');
      assert.equal(done.nextAttemptAt, null);
      ops.env.clock.advance(HOUR);
      assert.equal(await ops.drain(), 0, 'a successful redelivery ends the schedule');
      assert.equal(r.requests.length, 2);
      assert.equal(r.requests[1]?.headers['x-service-webhook-id'], row.id);
    });

    it('refuses to redeliver a parked delivery (409) and another brand’s delivery (404)', async () => {
      const sub = await ops.call('POST', '/api/public/webhooks', 201, {
        url: 'https://hooks.example/x',
        events: ['partner.approved'],
      });
      await ops.call('PATCH', `/api/public/webhooks/${sub.id}`, 200, { status: 'disabled' });
      await firePartnerApproved(ops.env);
      const [row] = await deliveries(sub.id);
      assert.equal(row.status, 'parked');
      expectError(await ops.http.call('POST', `/api/public/webhook-deliveries/${row.id}/redeliver`), 409, 'conflict');
      const other = await ops.env.createBrand('Other 2');
      expectError(
        await ops.http.call('POST', `/api/public/webhook-deliveries/${row.id}/redeliver`, { key: other.apiKey }),
        404,
        'not_found',
      );
    });
  });
}
