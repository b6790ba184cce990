import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const CONVERSIONS = '/api/v1/conversions';

for (const dialect of testedDialects()) {
  describe(`approving and rejecting conversions (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect);
      const offer = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Held', destinationUrl: 'https://shop.example/', revenueCents: 4000, payoutCents: 1000 },
      });
      offerId = offer.body.id;
      const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      partnerId = partner.body.id;
    });
    after(() => env.close());

    async function pending(extra: Record<string, unknown> = {}) {
      const res = await env.request('POST', CONVERSIONS, { body: { offerId, partnerId, ...extra } });
      assert.equal(res.status, 201);
      assert.equal(res.body.status, 'pending');
      return res.body;
    }
    async function eventsFor(type: string, conversionId: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', type)
        .orderBy('id')
        .execute();
      return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.conversionId === conversionId);
    }
    /** POST with a JSON content type and a literally empty body, as many clients send it. */
    const emptyJsonPost = (url: string, key = env.brand.apiKey) =>
      env.app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: '',
      });

    describe('POST /api/v1/conversions/:id/approve', () => {
      it('approves a pending conversion and fires conversion.approved with approvedBy manual', async () => {
        const conversion = await pending({ sub1: 's1', externalTxnId: 'APPROVE-1' });
        env.clock.advance(30_000);
        const approvedAt = new Date(env.clock.now()).toISOString();
        const res = await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`);
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'approved');
        assert.equal(res.body.approvedAt, approvedAt);
        assert.equal(res.body.rejectedAt, null);
        const events = await eventsFor('conversion.approved', conversion.id);
        assert.equal(events.length, 1);
        const event = events[0];
        assert.match(event.id, /^evt_/);
        assert.equal(event.event, 'conversion.approved');
        assert.equal(event.createdAt, approvedAt);
        assert.equal(event.brandId, env.brand.id);
        assert.deepEqual(event.data, {
          conversionId: conversion.id,
          metadata: {},
          partnerId,
          offerId,
          revenueCents: 4000,
          payoutCents: 1000,
          currency: 'USD',
          status: 'approved',
          sub1: 's1',
          externalTxnId: 'APPROVE-1',
          approvedAt,
          rejectedAt: null,
          rejectionReason: null,
          approvedBy: 'manual',
        });
      });

      it('accepts a JSON content type with an empty body', async () => {
        const conversion = await pending();
        const res = await emptyJsonPost(`${CONVERSIONS}/${conversion.id}/approve`);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().status, 'approved');
      });

      it('answers 409 conflict for an approved conversion, firing nothing more', async () => {
        const conversion = await pending();
        await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`);
        expectError(await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`), 409, 'conflict');
        assert.equal((await eventsFor('conversion.approved', conversion.id)).length, 1);
      });

      it('answers 409 conflict for a rejected conversion and leaves it rejected', async () => {
        const conversion = await pending();
        await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, { body: { reason: 'test' } });
        expectError(await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`), 409, 'conflict');
        const stored = await env.request('GET', `${CONVERSIONS}/${conversion.id}`);
        assert.equal(stored.body.status, 'rejected');
        assert.equal(stored.body.approvedAt, null);
        assert.equal((await eventsFor('conversion.approved', conversion.id)).length, 0);
      });
    });

    describe('POST /api/v1/conversions/:id/reject', () => {
      it('rejects with a reason and fires conversion.rejected with approvedBy null', async () => {
        const conversion = await pending();
        env.clock.advance(10_000);
        const rejectedAt = new Date(env.clock.now()).toISOString();
        const res = await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, {
          body: { reason: 'duplicate order' },
        });
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'rejected');
        assert.equal(res.body.rejectedAt, rejectedAt);
        assert.equal(res.body.rejectionReason, 'duplicate order');
        const events = await eventsFor('conversion.rejected', conversion.id);
        assert.equal(events.length, 1);
        assert.equal(events[0].createdAt, rejectedAt);
        assert.deepEqual(events[0].data, {
          conversionId: conversion.id,
          metadata: {},
          partnerId,
          offerId,
          revenueCents: 4000,
          payoutCents: 1000,
          currency: 'USD',
          status: 'rejected',
          sub1: null,
          externalTxnId: null,
          approvedAt: null,
          rejectedAt,
          rejectionReason: 'duplicate order',
          approvedBy: null,
        });
      });

      it('rejects without a reason when the body is an empty object', async () => {
        const conversion = await pending();
        const res = await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, { body: {} });
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'rejected');
        assert.equal(res.body.rejectionReason, null);
        const [event] = await eventsFor('conversion.rejected', conversion.id);
        assert.equal(event?.data.rejectionReason, null);
      });

      it('rejects when the body is empty with a JSON content type', async () => {
        const conversion = await pending();
        const res = await emptyJsonPost(`${CONVERSIONS}/${conversion.id}/reject`);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().status, 'rejected');
        assert.equal(res.json().rejectionReason, null);
      });

      it('answers 409 conflict for an approved conversion', async () => {
        const conversion = await pending();
        await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`);
        const res = await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, { body: { reason: 'late' } });
        expectError(res, 409, 'conflict');
        assert.equal((await eventsFor('conversion.rejected', conversion.id)).length, 0);
      });

      it('answers 422 for an unknown field in the body', async () => {
        const conversion = await pending();
        const res = await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, { body: { why: 'x' } });
        expectError(res, 422, 'validation_error');
        assert.equal((await env.request('GET', `${CONVERSIONS}/${conversion.id}`)).body.status, 'pending');
      });
    });

    describe("another brand's conversion", () => {
      it('is 404 on GET, approve and reject, and stays pending', async () => {
        const conversion = await pending();
        const other = await env.createBrand('Intruder');
        const key = other.apiKey;
        expectError(await env.request('GET', `${CONVERSIONS}/${conversion.id}`, { key }), 404, 'not_found');
        expectError(await env.request('POST', `${CONVERSIONS}/${conversion.id}/approve`, { key }), 404, 'not_found');
        const reject = await env.request('POST', `${CONVERSIONS}/${conversion.id}/reject`, { key, body: {} });
        expectError(reject, 404, 'not_found');
        assert.equal((await env.request('GET', `${CONVERSIONS}/${conversion.id}`)).body.status, 'pending');
      });

      it('is 404 for an unknown id', async () => {
        expectError(await env.request('GET', `${CONVERSIONS}/conv_00000000000000000000000000`), 404, 'not_found');
        const approve = await env.request('POST', `${CONVERSIONS}/conv_00000000000000000000000000/approve`);
        expectError(approve, 404, 'not_found');
      });
    });
  });
}
