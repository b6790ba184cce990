import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const CONVERSIONS = '/api/v1/conversions';

for (const dialect of testedDialects()) {
  describe(`POST /api/v1/conversions (${dialect})`, () => {
    let env: TestEnv;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect);
      partnerId = await newPartner('Main Partner');
    });
    after(() => env.close());

    async function newOffer(body: Record<string, unknown> = {}): Promise<string> {
      const res = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Offer', destinationUrl: 'https://shop.example/', ...body },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    async function newPartner(name = 'Partner'): Promise<string> {
      const res = await env.request('POST', '/api/v1/partners', { body: { name, email: 'p@example.com' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    const record = (body: Record<string, unknown>) => env.request('POST', CONVERSIONS, { body });
    async function createdEvents(conversionId?: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', 'conversion.created')
        .orderBy('id')
        .execute();
      const all = rows.map((r) => JSON.parse(r.payload));
      return conversionId ? all.filter((e) => e.data.conversionId === conversionId) : all;
    }

    describe('recording by offerId and partnerId', () => {
      it('answers 201 with amounts and currency taken from the offer', async () => {
        const offerId = await newOffer({ revenueCents: 5000, payoutCents: 1500, currency: 'EUR' });
        const res = await record({ offerId, partnerId });
        assert.equal(res.status, 201);
        assert.match(res.body.id, /^conv_[0-9A-Z]{26}$/);
        assert.equal(res.body.offerId, offerId);
        assert.equal(res.body.partnerId, partnerId);
        assert.equal(res.body.clickId, null);
        assert.equal(res.body.revenueCents, 5000);
        assert.equal(res.body.payoutCents, 1500);
        assert.equal(res.body.currency, 'EUR');
        assert.equal(res.body.capExceeded, false);
        assert.equal(res.body.createdAt, new Date(env.clock.now()).toISOString());
        assert.deepEqual((await env.request('GET', `${CONVERSIONS}/${res.body.id}`)).body, res.body);
      });

      it('lets explicit amounts and currency override the offer, zero included', async () => {
        const offerId = await newOffer({ revenueCents: 5000, payoutCents: 1500, currency: 'EUR' });
        const res = await record({ offerId, partnerId, revenueCents: 999, payoutCents: 0, currency: 'GBP' });
        assert.equal(res.status, 201);
        assert.equal(res.body.revenueCents, 999);
        assert.equal(res.body.payoutCents, 0);
        assert.equal(res.body.currency, 'GBP');
      });

      it("answers 422 for another currency with an amount left to the offer's, storing nothing", async () => {
        const offerId = await newOffer({ revenueCents: 1000, payoutCents: 250, currency: 'USD' });
        const cases: Array<[Record<string, unknown>, string[]]> = [
          [{ currency: 'jpy' }, ['payoutCents', 'revenueCents']],
          [{ currency: 'EUR', revenueCents: 5 }, ['payoutCents']],
          [{ currency: 'EUR', payoutCents: 5 }, ['revenueCents']],
        ];
        for (const [fields, paths] of cases) {
          const res = await record({ offerId, partnerId, externalTxnId: 'relabel', ...fields });
          const error = expectError(res, 422, 'validation_error');
          assert.deepEqual(error.details?.map((d) => d.path).sort(), paths, JSON.stringify(fields));
          assert.match(error.details?.[0]?.message ?? '', /differs from the offer's \(USD\)/);
        }
        const list = await env.request('GET', `/api/v1/conversions?offerId=${offerId}`);
        assert.equal(list.body.data.length, 0);
        // The offer's own currency, in any case, keeps its amounts.
        const same = await record({ offerId, partnerId, currency: 'usd' });
        assert.equal(same.status, 201);
        assert.deepEqual([same.body.revenueCents, same.body.payoutCents, same.body.currency], [1000, 250, 'USD']);
      });

      it("starts pending when the offer's conversionStatus is pending", async () => {
        const res = await record({ offerId: await newOffer({ conversionStatus: 'pending' }), partnerId });
        assert.equal(res.body.status, 'pending');
        assert.equal(res.body.approvedAt, null);
      });

      it("starts approved when the offer's conversionStatus is approved", async () => {
        const res = await record({ offerId: await newOffer({ conversionStatus: 'approved' }), partnerId });
        assert.equal(res.body.status, 'approved');
        assert.equal(res.body.approvedAt, res.body.createdAt);
      });

      it('sets holdUntil to createdAt plus holdSeconds for a pending start', async () => {
        const res = await record({ offerId: await newOffer({ holdSeconds: 3600 }), partnerId });
        assert.equal(res.body.status, 'pending');
        assert.equal(Date.parse(res.body.holdUntil) - Date.parse(res.body.createdAt), 3_600_000);
      });

      it('leaves holdUntil null for an approved start or an offer without hold time', async () => {
        const approved = await record({
          offerId: await newOffer({ conversionStatus: 'approved', holdSeconds: 3600 }),
          partnerId,
        });
        assert.equal(approved.body.holdUntil, null);
        const manual = await record({ offerId: await newOffer({ holdSeconds: null }), partnerId });
        assert.equal(manual.body.holdUntil, null);
      });

      it('stores sub1 to sub5 and externalTxnId', async () => {
        const subs = { sub1: 'a', sub2: 'b', sub3: 'c', sub4: 'd', sub5: 'e' };
        const res = await record({ offerId: await newOffer(), partnerId, externalTxnId: 'ORD-SUBS', ...subs });
        assert.deepEqual(
          [res.body.sub1, res.body.sub2, res.body.sub3, res.body.sub4, res.body.sub5],
          ['a', 'b', 'c', 'd', 'e'],
        );
        assert.equal(res.body.externalTxnId, 'ORD-SUBS');
      });
    });

    describe('the conversion.created event', () => {
      it("carries exactly the nine fields of the spec's table, plus the conversion's metadata", async () => {
        const offerId = await newOffer({ revenueCents: 2500, payoutCents: 700 });
        const res = await record({ offerId, partnerId, sub1: 'newsletter', externalTxnId: 'ORD-9' });
        const [event, ...more] = await createdEvents(res.body.id);
        assert.equal(more.length, 0);
        assert.deepEqual(Object.keys(event), ['id', 'event', 'createdAt', 'brandId', 'data']);
        assert.match(event.id, /^evt_[0-9A-Z]{26}$/);
        assert.equal(event.event, 'conversion.created');
        assert.equal(event.createdAt, new Date(env.clock.now()).toISOString());
        assert.equal(event.brandId, env.brand.id);
        assert.deepEqual(Object.keys(event.data).sort(), [
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
        assert.deepEqual(event.data, {
          conversionId: res.body.id,
          partnerId,
          offerId,
          revenueCents: 2500,
          payoutCents: 700,
          currency: 'USD',
          status: 'pending',
          sub1: 'newsletter',
          externalTxnId: 'ORD-9',
          metadata: {},
        });
        assert.ok(Number.isInteger(event.data.revenueCents) && Number.isInteger(event.data.payoutCents));
      });

      it('sends sub1 and externalTxnId as null when they were not supplied', async () => {
        const res = await record({ offerId: await newOffer({ conversionStatus: 'approved' }), partnerId });
        const [event] = await createdEvents(res.body.id);
        assert.equal(event.data.sub1, null);
        assert.equal(event.data.externalTxnId, null);
        assert.equal(event.data.status, 'approved');
      });
    });

    describe('duplicates by externalTxnId', () => {
      it('answers 200 with the existing conversion for a repeat on the same offer, firing nothing', async () => {
        const offerId = await newOffer();
        const first = await record({ offerId, partnerId, externalTxnId: 'ORD-1', revenueCents: 100 });
        assert.equal(first.status, 201);
        env.clock.advance(1_000);
        const again = await record({ offerId, partnerId, externalTxnId: 'ORD-1', revenueCents: 999 });
        assert.equal(again.status, 200);
        assert.deepEqual(again.body, first.body);
        assert.equal((await createdEvents(first.body.id)).length, 1);
        const listed = await env.request('GET', `${CONVERSIONS}?offerId=${offerId}`);
        assert.equal(listed.body.data.length, 1);
      });

      it('records the same externalTxnId on another offer as a new conversion', async () => {
        const first = await record({ offerId: await newOffer(), partnerId, externalTxnId: 'ORD-SHARED' });
        const second = await record({ offerId: await newOffer(), partnerId, externalTxnId: 'ORD-SHARED' });
        assert.equal(second.status, 201);
        assert.notEqual(second.body.id, first.body.id);
        assert.equal((await createdEvents(second.body.id)).length, 1);
      });

      it('never treats conversions without externalTxnId as duplicates', async () => {
        const offerId = await newOffer();
        const a = await record({ offerId, partnerId });
        const b = await record({ offerId, partnerId });
        assert.equal(b.status, 201);
        assert.notEqual(a.body.id, b.body.id);
      });

      it('creates one conversion and one event from 20 concurrent repeats', async () => {
        const offerId = await newOffer();
        const responses = await Promise.all(
          Array.from({ length: 20 }, () => record({ offerId, partnerId, externalTxnId: 'ORD-RACE' })),
        );
        const statuses = responses.map((r) => r.status).sort();
        assert.deepEqual(statuses, [...Array(19).fill(200), 201]);
        assert.equal(new Set(responses.map((r) => r.body.id)).size, 1);
        const rows = await env.ctx.db.read
          .selectFrom('conversions')
          .select('id')
          .where('external_txn_id', '=', 'ORD-RACE')
          .execute();
        assert.equal(rows.length, 1);
        const events = (await createdEvents()).filter((e) => e.data.externalTxnId === 'ORD-RACE');
        assert.equal(events.length, 1);
      });
    });

    describe('validation', () => {
      const expectInvalid = async (body: Record<string, unknown>, path: string) => {
        const before = (await createdEvents()).length;
        const error = expectError(await record(body), 422, 'validation_error');
        assert.ok(
          error.details?.some((d) => d.path === path),
          `expected a problem at ${path}: ${JSON.stringify(error.details)}`,
        );
        assert.equal((await createdEvents()).length, before, 'nothing is recorded');
      };

      it('answers 422 for an unknown offer', async () => {
        await expectInvalid({ offerId: 'off_00000000000000000000000000', partnerId }, 'offerId');
      });

      it("answers 422 for another brand's offer", async () => {
        const other = await env.createBrand('Other Offers');
        const theirs = await env.request('POST', '/api/v1/offers', {
          key: other.apiKey,
          body: { name: 'Theirs', destinationUrl: 'https://other.example/' },
        });
        await expectInvalid({ offerId: theirs.body.id, partnerId }, 'offerId');
      });

      it('answers 422 for an archived offer', async () => {
        await expectInvalid({ offerId: await newOffer({ status: 'archived' }), partnerId }, 'offerId');
      });

      it('answers 422 for an unknown partner', async () => {
        await expectInvalid({ offerId: await newOffer(), partnerId: 'prt_00000000000000000000000000' }, 'partnerId');
      });

      it('answers 422 for a banned partner', async () => {
        const banned = await newPartner('Banned');
        await env.request('POST', `/api/v1/partners/${banned}/ban`, { body: { reason: 'fraud' } });
        await expectInvalid({ offerId: await newOffer(), partnerId: banned }, 'partnerId');
      });

      it('answers 422 for a partner who is still an applicant', async () => {
        const applied = await env.request('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: env.brand.slug, name: 'Hopeful', email: 'hopeful@example.com' },
        });
        assert.equal(applied.status, 201);
        await expectInvalid({ offerId: await newOffer(), partnerId: applied.body.id }, 'partnerId');
      });

      it('answers 422 when neither clickId nor offerId is given', async () => {
        const error = expectError(await record({ partnerId }), 422, 'validation_error');
        assert.ok((error.details?.length ?? 0) > 0);
        expectError(await record({}), 422, 'validation_error');
      });

      it('answers 422 for a bad currency, a negative amount or a string amount', async () => {
        const offerId = await newOffer();
        await expectInvalid({ offerId, partnerId, currency: 'XYZ' }, 'currency');
        await expectInvalid({ offerId, partnerId, revenueCents: -5 }, 'revenueCents');
        await expectInvalid({ offerId, partnerId, payoutCents: '100' }, 'payoutCents');
        await expectInvalid({ offerId, partnerId, amount: 5 }, 'amount');
      });
    });
  });
}
