import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Database } from '../../src/db/database.js';
import { approveExpiredHolds } from '../../src/modules/conversions/service.js';
import {
  createTestDatabase,
  createTestEnv,
  describeOrSkip,
  postgresOnly,
  type TestDatabase,
  type TestEnv,
  testedDialects,
} from '../helpers.js';

const HOLD_SECONDS = 60;

async function newOffer(env: TestEnv, body: Record<string, unknown>): Promise<string> {
  const res = await env.request('POST', '/api/v1/offers', {
    body: {
      name: 'Held offer',
      destinationUrl: 'https://shop.example/',
      revenueCents: 3000,
      payoutCents: 900,
      ...body,
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function newPartner(env: TestEnv): Promise<string> {
  const res = await env.request('POST', '/api/v1/partners', { body: { name: 'Holder', email: 'h@example.com' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function record(env: TestEnv, offerId: string, partnerId: string) {
  const res = await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function approvedEvents(env: TestEnv, conversionId: string) {
  const rows = await env.ctx.db.read
    .selectFrom('events')
    .select('payload')
    .where('type', '=', 'conversion.approved')
    .execute();
  return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.conversionId === conversionId);
}

const statusOf = async (env: TestEnv, id: string) => (await env.request('GET', `/api/v1/conversions/${id}`)).body;

for (const dialect of testedDialects()) {
  describe(`automatic approval after the hold time (${dialect})`, () => {
    let env: TestEnv;
    let heldOffer: string;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect);
      heldOffer = await newOffer(env, { holdSeconds: HOLD_SECONDS });
      partnerId = await newPartner(env);
    });
    after(() => env.close());

    it('keeps a conversion pending one second before its hold ends', async () => {
      const conversion = await record(env, heldOffer, partnerId);
      env.clock.advance((HOLD_SECONDS - 1) * 1000);
      await approveExpiredHolds(env.ctx);
      assert.equal((await statusOf(env, conversion.id)).status, 'pending');
      assert.equal((await approvedEvents(env, conversion.id)).length, 0);
      env.clock.advance(1000); // leave nothing due for the next test
      await approveExpiredHolds(env.ctx);
    });

    it('approves it when the hold ends and fires conversion.approved with approvedBy hold_expired', async () => {
      const conversion = await record(env, heldOffer, partnerId);
      env.clock.advance(HOLD_SECONDS * 1000);
      const approvedAt = new Date(env.clock.now()).toISOString();
      assert.equal(approvedAt, conversion.holdUntil);
      assert.equal(await approveExpiredHolds(env.ctx), 1);
      const stored = await statusOf(env, conversion.id);
      assert.equal(stored.status, 'approved');
      assert.equal(stored.approvedAt, approvedAt);
      const events = await approvedEvents(env, conversion.id);
      assert.equal(events.length, 1);
      assert.equal(events[0].createdAt, approvedAt);
      assert.equal(events[0].brandId, env.brand.id);
      assert.deepEqual(events[0].data, {
        conversionId: conversion.id,
        metadata: {},
        partnerId,
        offerId: heldOffer,
        revenueCents: 3000,
        payoutCents: 900,
        currency: 'USD',
        status: 'approved',
        sub1: null,
        externalTxnId: null,
        approvedAt,
        rejectedAt: null,
        rejectionReason: null,
        approvedBy: 'hold_expired',
      });
    });

    it('approves exactly once when two runs race', async () => {
      const conversion = await record(env, heldOffer, partnerId);
      env.clock.advance(HOLD_SECONDS * 1000);
      const counts = await Promise.all([approveExpiredHolds(env.ctx), approveExpiredHolds(env.ctx)]);
      assert.equal(counts[0] + counts[1], 1, `counts ${counts}`);
      assert.equal((await approvedEvents(env, conversion.id)).length, 1);
      assert.equal(await approveExpiredHolds(env.ctx), 0);
    });

    it('never auto-approves a conversion whose offer has no hold time', async () => {
      const manualOffer = await newOffer(env, { holdSeconds: null });
      const conversion = await record(env, manualOffer, partnerId);
      assert.equal(conversion.holdUntil, null);
      env.clock.advance(366 * 24 * 3600 * 1000);
      await approveExpiredHolds(env.ctx);
      assert.equal((await statusOf(env, conversion.id)).status, 'pending');
      assert.equal((await approvedEvents(env, conversion.id)).length, 0);
    });

    it('ignores holdSeconds for offers that start conversions approved', async () => {
      const approvedOffer = await newOffer(env, { conversionStatus: 'approved', holdSeconds: HOLD_SECONDS });
      const conversion = await record(env, approvedOffer, partnerId);
      assert.equal(conversion.status, 'approved');
      assert.equal(conversion.holdUntil, null);
      env.clock.advance(HOLD_SECONDS * 2000);
      assert.equal(await approveExpiredHolds(env.ctx), 0);
      assert.equal((await approvedEvents(env, conversion.id)).length, 0);
      assert.equal((await statusOf(env, conversion.id)).approvedAt, conversion.approvedAt);
    });

    it('leaves a conversion of a partner banned during its hold pending, for a person', async () => {
      const banned = await newPartner(env);
      const conversion = await record(env, heldOffer, banned);
      const ban = await env.request('POST', `/api/v1/partners/${banned}/ban`, { body: { reason: 'fraud ring' } });
      assert.equal(ban.status, 200, JSON.stringify(ban.body));
      env.clock.advance(HOLD_SECONDS * 1000);
      assert.equal(await approveExpiredHolds(env.ctx), 0);
      assert.equal((await statusOf(env, conversion.id)).status, 'pending');
      assert.equal((await approvedEvents(env, conversion.id)).length, 0);
    });

    it('leaves a conversion rejected during its hold rejected', async () => {
      const conversion = await record(env, heldOffer, partnerId);
      await env.request('POST', `/api/v1/conversions/${conversion.id}/reject`, { body: { reason: 'refund' } });
      env.clock.advance(HOLD_SECONDS * 1000);
      assert.equal(await approveExpiredHolds(env.ctx), 0);
      assert.equal((await statusOf(env, conversion.id)).status, 'rejected');
      assert.equal((await approvedEvents(env, conversion.id)).length, 0);
    });

    it('does not approve again a conversion approved by hand during its hold', async () => {
      const conversion = await record(env, heldOffer, partnerId);
      await env.request('POST', `/api/v1/conversions/${conversion.id}/approve`);
      env.clock.advance(HOLD_SECONDS * 1000);
      assert.equal(await approveExpiredHolds(env.ctx), 0);
      const events = await approvedEvents(env, conversion.id);
      assert.deepEqual(
        events.map((e) => e.data.approvedBy),
        ['manual'],
      );
    });
  });

  const twoInstances = `automatic approval from two app instances on one database (${dialect})`;
  describeOrSkip(twoInstances, postgresOnly(dialect), () => {
    let database: TestDatabase;
    let second: Database;
    let envA: TestEnv;
    let envB: TestEnv;
    before(async () => {
      database = await createTestDatabase(dialect);
      envA = await createTestEnv(dialect, { database });
      // A second pool on the same schema stands in for a second worker process.
      second = new Database({
        databaseUrl: database.url,
        dataDir: database.dataDir,
        schema: database.schema ?? undefined,
        poolSize: 5,
      });
      envB = await createTestEnv(dialect, { database: { ...database, db: second }, clock: envA.clock });
    });
    after(async () => {
      await envA.close();
      await envB.close();
      await second.close();
      await envA.ctx.db.close();
      await database.drop();
    });

    it('approves every expired hold exactly once when both run at the same time', async () => {
      const offerId = await newOffer(envA, { holdSeconds: HOLD_SECONDS });
      const partnerId = await newPartner(envA);
      const conversions = [];
      for (let i = 0; i < 10; i++) conversions.push(await record(envA, offerId, partnerId));
      envA.clock.advance(HOLD_SECONDS * 1000);
      const counts = await Promise.all([approveExpiredHolds(envA.ctx), approveExpiredHolds(envB.ctx)]);
      assert.equal(counts[0] + counts[1], conversions.length, `counts ${counts}`);
      for (const conversion of conversions) {
        assert.equal((await statusOf(envA, conversion.id)).status, 'approved');
        assert.equal((await approvedEvents(envA, conversion.id)).length, 1, conversion.id);
      }
    });
  });
}
