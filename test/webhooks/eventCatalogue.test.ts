import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jsonValidator } from '../../src/http/validation.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { ALL_EVENTS, fireConversionCreated, Receiver, subscribe } from './harness.js';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface CatalogueEntry {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  example: { id: string; event: string; createdAt: string; brandId: string; data: Record<string, unknown> };
}

/** The app's own JSON validator; Ajv caches by schema object, so compiling the same catalogue schema twice is cheap. */
const compile = (schema: Record<string, unknown>) => jsonValidator(schema);

for (const dialect of testedDialects()) {
  describe(`GET /api/public/webhook-events (${dialect})`, () => {
    let env: TestEnv;
    let catalogue: CatalogueEntry[];
    before(async () => {
      env = await createTestEnv(dialect);
      const res = await env.request('GET', '/api/public/webhook-events', { key: null });
      assert.equal(res.status, 200);
      catalogue = res.body.data;
    });
    after(() => env.close());

    it('answers without an API key', async () => {
      const res = await env.request('GET', '/api/public/webhook-events', { key: null });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /application\/json/);
    });

    it('lists the eight events of spec section 6, the payout events and the operational webhook events', () => {
      assert.deepEqual(catalogue.map((e) => e.name).sort(), [...ALL_EVENTS].sort());
    });

    it('gives every event a description, a JSON Schema object and an example', () => {
      for (const entry of catalogue) {
        assert.deepEqual(Object.keys(entry).sort(), ['description', 'example', 'name', 'schema'], entry.name);
        assert.equal(typeof entry.description, 'string');
        assert.ok(entry.description.length > 10, entry.name);
        assert.equal(entry.schema.type, 'object', entry.name);
        assert.equal(typeof entry.schema.properties, 'object', entry.name);
      }
    });

    it('shows each example as a full envelope of spec section 2 for its own event', () => {
      for (const { name, example } of catalogue) {
        assert.deepEqual(Object.keys(example), ['id', 'event', 'createdAt', 'brandId', 'data'], name);
        assert.match(example.id, /^evt_/);
        assert.equal(example.event, name);
        assert.match(example.createdAt, ISO_MS);
        assert.equal(typeof example.brandId, 'string');
        assert.equal(typeof example.data, 'object');
      }
    });

    it("validates each example's data against its own schema", () => {
      for (const { name, schema, example } of catalogue) {
        const validate = compile(schema);
        assert.ok(validate(example.data), `${name}: ${JSON.stringify(validate.errors)}`);
      }
    });

    it('publishes schemas that reject data with a field missing or of the wrong type', () => {
      for (const { name, schema, example } of catalogue) {
        const validate = compile(schema);
        const [first] = Object.keys(example.data);
        assert.ok(first, name);
        const { [first]: _dropped, ...missing } = example.data;
        assert.equal(validate(missing), false, `${name} accepts data without ${first}`);
        assert.equal(validate({ ...example.data, [first]: { nested: true } }), false, name);
      }
    });

    it('documents the nine conversion.created fields of spec section 2, plus metadata', () => {
      const entry = catalogue.find((e) => e.name === 'conversion.created');
      const properties = Object.keys((entry?.schema.properties ?? {}) as Record<string, unknown>).sort();
      assert.deepEqual(properties, [
        'conversionId',
        'currency',
        'externalTxnId',
        'metadata',
        'offerId',
        'partnerId',
        'payoutCents',
        'revenueCents',
        'status',
        'sub1',
      ]);
    });

    it('describes a real conversion.created delivery correctly, with and without sub1 and externalTxnId', async () => {
      const receiver = await Receiver.answering(200);
      const dispatcher = new Dispatcher(env.ctx);
      try {
        await subscribe(env, { url: receiver.url, events: ['conversion.created'] });
        const withSubs = await fireConversionCreated(
          env,
          { sub1: 'campaign-42', externalTxnId: 'order-1001', revenueCents: 1234, payoutCents: 321 },
          { conversionStatus: 'approved', currency: 'EUR' },
        );
        await fireConversionCreated(env);
        assert.equal(await dispatcher.runOnce(), 2);
        const entry = catalogue.find((e) => e.name === 'conversion.created');
        assert.ok(entry);
        const validate = compile(entry.schema);
        // Both are sent at once, so they may arrive in either order.
        const payloads = receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')));
        const full = payloads.find((p) => p.data.conversionId === withSubs.id);
        const bare = payloads.find((p) => p.data.conversionId !== withSubs.id);
        for (const payload of [full, bare]) {
          assert.equal(payload.event, 'conversion.created');
          assert.ok(validate(payload.data), JSON.stringify(validate.errors));
        }
        assert.equal(full.data.status, 'approved');
        assert.equal(full.data.currency, 'EUR');
        assert.equal(full.data.revenueCents, 1234);
        assert.equal(full.data.payoutCents, 321);
        assert.equal(full.data.sub1, 'campaign-42');
        assert.equal(full.data.externalTxnId, 'order-1001');
        assert.equal(bare.data.status, 'pending');
        assert.equal(bare.data.sub1, null);
        assert.equal(bare.data.externalTxnId, null);
      } finally {
        await dispatcher.close();
        await receiver.close();
      }
    });
  });
}
