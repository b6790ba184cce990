import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { listen, type WireClient } from './http.js';

for (const dialect of testedDialects()) {
  describe(`metadata over HTTP (${dialect})`, () => {
    let env: TestEnv;
    let http: WireClient;
    /** The `data` of the last stored event of `type` that mentions `id`. */
    const eventData = async (type: string, id: string) => {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', type)
        .where('payload', 'like', `%${id}%`)
        .execute();
      assert.equal(rows.length, 1, `${type} of ${id}`);
      return JSON.parse((rows[0] as { payload: string }).payload).data;
    };

    before(async () => {
      env = await createTestEnv(dialect);
      http = await listen(env);
    });
    after(() => env.close());

    it('refuses the metadata key "__proto__" with 422 instead of dropping it, and keeps "constructor" and "prototype"', async () => {
      const raw = '{"name":"P","destinationUrl":"https://shop.example/","metadata":{"__proto__":"v","a":"b"}}';
      const refused = await http.call('POST', '/api/v1/offers', { raw });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'validation_error');
      assert.deepEqual(refused.body.error.details, [
        { path: 'metadata.__proto__', message: 'key must not be "__proto__"' },
      ]);
      const kept = await http.call('POST', '/api/v1/offers', {
        body: { name: 'K', destinationUrl: 'https://shop.example/', metadata: { constructor: 'c', prototype: 'p' } },
      });
      assert.equal(kept.status, 201);
      assert.deepEqual(kept.body.metadata, { constructor: 'c', prototype: 'p' });
      const patched = await http.call('PATCH', `/api/v1/offers/${kept.body.id}`, {
        raw: '{"metadata":{"__proto__":"x"}}',
      });
      assert.equal(patched.status, 422, JSON.stringify(patched.body));
      assert.equal(patched.body.error.details?.[0]?.path, 'metadata.__proto__');
      const after = await http.call('GET', `/api/v1/offers/${kept.body.id}`);
      assert.deepEqual(after.body.metadata, { constructor: 'c', prototype: 'p' });
    });

    it('sets metadata on an offer, returns it everywhere, merges updates key by key', async () => {
      const created = await http.call('POST', '/api/v1/offers', {
        body: { name: 'M', destinationUrl: 'https://shop.example/', metadata: { campaign: 'summer', team: 'growth' } },
      });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.metadata, { campaign: 'summer', team: 'growth' });
      const id = created.body.id;
      assert.deepEqual((await http.call('GET', `/api/v1/offers/${id}`)).body.metadata, created.body.metadata);
      const listed = (await http.call('GET', '/api/v1/offers')).body.data.find((o: { id: string }) => o.id === id);
      assert.deepEqual(listed.metadata, created.body.metadata);
      const merged = await http.call('PATCH', `/api/v1/offers/${id}`, {
        body: { metadata: { team: '', region: 'eu' } },
      });
      assert.deepEqual(merged.body.metadata, { campaign: 'summer', region: 'eu' });
      const untouched = await http.call('PATCH', `/api/v1/offers/${id}`, { body: { name: 'M2' } });
      assert.deepEqual(untouched.body.metadata, { campaign: 'summer', region: 'eu' });
      const cleared = await http.call('PATCH', `/api/v1/offers/${id}`, { body: { metadata: null } });
      assert.deepEqual(cleared.body.metadata, {});
      const plain = await http.call('POST', '/api/v1/offers', {
        body: { name: 'N', destinationUrl: 'https://shop.example/' },
      });
      assert.deepEqual(plain.body.metadata, {});
    });

    it('refuses metadata beyond its limits, naming each problem', async () => {
      const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
      const res = await http.call('POST', '/api/v1/offers', {
        body: { name: 'L', destinationUrl: 'https://shop.example/', metadata: tooMany },
      });
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.error.details, [{ path: 'metadata', message: 'must have at most 50 keys' }]);
      const shapes = await http.call('POST', '/api/v1/offers', {
        body: {
          name: 'L',
          destinationUrl: 'https://shop.example/',
          metadata: { ['k'.repeat(41)]: 'v', long: 'x'.repeat(501), count: 3 },
        },
      });
      assert.equal(shapes.status, 422);
      const byPath = Object.fromEntries(
        shapes.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]),
      );
      assert.deepEqual(byPath, {
        [`metadata.${'k'.repeat(41)}`]: 'key must be at most 40 characters',
        'metadata.long': 'must be at most 500 characters long',
        'metadata.count': 'must be a string',
      });
      const offer = await http.call('POST', '/api/v1/offers', {
        body: {
          name: 'F',
          destinationUrl: 'https://shop.example/',
          metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])),
        },
      });
      assert.equal(offer.status, 201);
      const over = await http.call('PATCH', `/api/v1/offers/${offer.body.id}`, { body: { metadata: { extra: 'v' } } });
      assert.equal(over.status, 422);
      assert.equal(over.body.error.details[0].path, 'metadata');
      // A PATCH (pairs or null) names each problem the same way, not "must be an object or null".
      const patch = await http.call('PATCH', `/api/v1/offers/${offer.body.id}`, {
        body: { metadata: { ['k'.repeat(41)]: 'v', long: 'x'.repeat(501), count: 3 } },
      });
      assert.equal(patch.status, 422);
      assert.deepEqual(
        Object.fromEntries(patch.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message])),
        byPath,
      );
      const notPairs = await http.call('PATCH', `/api/v1/offers/${offer.body.id}`, { body: { metadata: 'x' } });
      assert.deepEqual(notPairs.body.error.details, [{ path: 'metadata', message: 'must be an object or null' }]);
    });

    it('carries partner and conversion metadata in their webhook data', async () => {
      const partner = await http.call('POST', '/api/v1/partners', {
        body: { name: 'P', email: 'p@example.com', metadata: { crm_id: '8841' } },
      });
      assert.deepEqual(partner.body.metadata, { crm_id: '8841' });
      assert.deepEqual((await eventData('partner.approved', partner.body.id)).metadata, { crm_id: '8841' });
      const patched = await http.call('PATCH', `/api/v1/partners/${partner.body.id}`, {
        body: { metadata: { tier: 'gold' } },
      });
      assert.deepEqual(patched.body.metadata, { crm_id: '8841', tier: 'gold' });
      assert.deepEqual(
        (await http.call('GET', `/api/v1/partners/${partner.body.id}`)).body.metadata,
        patched.body.metadata,
      );
      const banned = await http.call('POST', `/api/v1/partners/${partner.body.id}/ban`);
      assert.deepEqual(banned.body.metadata, patched.body.metadata);
      assert.deepEqual((await eventData('partner.banned', partner.body.id)).metadata, patched.body.metadata);

      const active = await http.call('POST', '/api/v1/partners', { body: { name: 'Q', email: 'q@example.com' } });
      const offer = await http.call('POST', '/api/v1/offers', {
        body: { name: 'C', destinationUrl: 'https://shop.example/' },
      });
      const conversion = await http.call('POST', '/api/v1/conversions', {
        body: { offerId: offer.body.id, partnerId: active.body.id, metadata: { order_source: 'app' } },
      });
      assert.equal(conversion.status, 201);
      assert.deepEqual(conversion.body.metadata, { order_source: 'app' });
      assert.deepEqual((await eventData('conversion.created', conversion.body.id)).metadata, { order_source: 'app' });
      const approved = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/approve`);
      assert.deepEqual(approved.body.metadata, { order_source: 'app' });
      assert.deepEqual((await eventData('conversion.approved', conversion.body.id)).metadata, { order_source: 'app' });
    });

    it('sets and merges metadata on webhook subscriptions', async () => {
      const created = await http.call('POST', '/api/public/webhooks', {
        body: { url: 'http://127.0.0.1:9/hooks', events: ['conversion.created'], metadata: { owner: 'ops' } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(created.body.metadata, { owner: 'ops' });
      const patched = await http.call('PATCH', `/api/public/webhooks/${created.body.id}`, {
        body: { metadata: { env: 'prod' } },
      });
      assert.deepEqual(patched.body.metadata, { owner: 'ops', env: 'prod' });
      const listed = (await http.call('GET', '/api/public/webhooks')).body.data.find(
        (s: { id: string }) => s.id === created.body.id,
      );
      assert.deepEqual(listed.metadata, { owner: 'ops', env: 'prod' });
    });
  });
}
