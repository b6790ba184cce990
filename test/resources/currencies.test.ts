/**
 * Amounts in major units (a pixel's `amount`, a partner's `{payout}`, a bank CSV's `amount`)
 * use ISO 4217's minor unit of the currency, and only ISO 4217's current codes are accepted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { Receiver } from '../receiver.js';

const BROWSER = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0';
const HOME_IP = '81.2.69.142';
const MINUTE = 60_000;

/** Currencies whose minor unit Intl (CLDR) got wrong or did not know, as `[code, minor units, major units]`. */
const AMOUNTS = [
  ['HUF', 123456, '1234.56'],
  ['IDR', 15000000, '150000.00'],
  ['IQD', 1250, '1.250'],
  ['CLF', 12345, '1.2345'],
] as const;

for (const dialect of testedDialects()) {
  describe(`ISO 4217 currencies (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    let receiver: Receiver;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      dispatcher = new Dispatcher(env.ctx);
      receiver = await Receiver.start();
    });
    after(async () => {
      await receiver.close();
      await dispatcher.close();
      await env.close();
    });

    async function created(path: string, body: Record<string, unknown>): Promise<string> {
      const res = await env.request('POST', path, { body });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    const offer = (body: Record<string, unknown>) =>
      created('/api/v1/offers', { name: 'O', destinationUrl: 'https://shop.example/', ...body });
    const partner = () => created('/api/v1/partners', { name: 'P', email: 'p@example.com' });
    async function click(offerId: string, partnerId: string): Promise<string> {
      const res = await env.app.inject({
        url: `/t/${offerId}/${partnerId}`,
        headers: { 'user-agent': BROWSER },
        remoteAddress: HOME_IP,
      });
      assert.equal(res.statusCode, 302, res.body);
      return (await env.request('GET', `/api/v1/clicks?offerId=${offerId}`)).body.data[0].id;
    }
    async function pixel(offerId: string, params: Record<string, string>) {
      const token = (await env.request('GET', `/api/v1/offers/${offerId}/postback-token`)).body.token;
      const clickId = await click(offerId, await partner());
      const res = await env.app.inject({
        url: `/postback?${new URLSearchParams({ token, click_id: clickId, ...params })}`,
      });
      const json = String(res.headers['content-type']).includes('json');
      return { status: res.statusCode, body: json ? res.json() : res.body };
    }
    const conversionsOf = async (offerId: string) =>
      (await env.request('GET', `/api/v1/conversions?offerId=${offerId}`)).body.data;

    describe('amounts in major units', () => {
      it("reads a pixel's amount with ISO's decimals: 1234.56 HUF, 150000.00 IDR, 1.250 IQD, 1.2345 CLF", async () => {
        for (const [currency, minor, major] of AMOUNTS) {
          const offerId = await offer({ currency });
          const res = await pixel(offerId, { amount: major });
          assert.equal(res.status, 200, `${currency}: ${JSON.stringify(res.body)}`);
          const [conversion] = await conversionsOf(offerId);
          assert.deepEqual([conversion?.currency, conversion?.revenueCents], [currency, minor]);
        }
      });

      it('takes a whole pixel amount in HUF as forints (1234 is 123400 fillér), and names ISO decimals when malformed', async () => {
        const offerId = await offer({ currency: 'HUF' });
        assert.equal((await pixel(offerId, { amount: '1234' })).status, 200);
        assert.equal((await conversionsOf(offerId))[0]?.revenueCents, 123400);
        const iqd = await offer({ currency: 'IQD' });
        const error = expectError(await pixel(iqd, { amount: '1.2345' }), 422, 'validation_error');
        assert.deepEqual(error.details, [{ path: 'query.amount', message: 'must be an amount in IQD such as 12.500' }]);
      });

      it("writes a partner's {payout} with ISO's decimals", async () => {
        const partnerId = await partner();
        await created(`/api/v1/partners/${partnerId}/postbacks`, {
          url: `${receiver.origin}/pb?payout={payout}&cur={currency}`,
          events: ['conversion.created'],
        });
        for (const [currency, minor] of AMOUNTS) {
          await created('/api/v1/conversions', { offerId: await offer({ currency, payoutCents: minor }), partnerId });
        }
        await dispatcher.runOnce();
        assert.deepEqual(
          new Set(receiver.requests.map((r) => r.path)),
          new Set(AMOUNTS.map(([currency, , major]) => `/pb?payout=${major}&cur=${currency}`)),
        );
      });

      it("exports a payout's bank CSV amount with ISO's decimals", async () => {
        const partnerId = await partner();
        for (const [currency, minor] of AMOUNTS) {
          const offerId = await offer({ currency, payoutCents: minor, conversionStatus: 'approved' });
          await created('/api/v1/conversions', { offerId, partnerId });
          await created('/api/v1/conversions', { offerId, partnerId });
        }
        env.clock.advance(MINUTE);
        const upTo = new Date(env.clock.now()).toISOString();
        const run = await env.request('POST', '/api/v1/payouts', { body: { upTo, partnerId } });
        assert.equal(run.status, 201, JSON.stringify(run.body));
        for (const [currency, minor, major] of AMOUNTS) {
          const payout = run.body.data.find((p: { currency: string }) => p.currency === currency);
          assert.equal(payout?.amountCents, 2 * minor, currency);
          const csv = await env.request('GET', `/api/v1/payouts/${payout.id}`, { headers: { accept: 'text/csv' } });
          const rows = String(csv.body).trimEnd().split('\r\n').slice(1);
          assert.deepEqual(
            rows.map((row) => row.split(',').slice(-2)),
            [
              [major, String(minor)],
              [major, String(minor)],
            ],
            currency,
          );
        }
      });
    });

    describe('accepted codes', () => {
      it('accepts current ISO codes that Intl does not list (CLF, USN, BOV, CHE) on offers, conversions, pixels and the brand', async () => {
        const partnerId = await partner();
        for (const currency of ['CLF', 'USN', 'BOV', 'CHE']) {
          const offerId = await offer({ currency: currency.toLowerCase() });
          assert.equal((await env.request('GET', `/api/v1/offers/${offerId}`)).body.currency, currency);
          const body = { offerId, partnerId, currency, revenueCents: 1, payoutCents: 1 };
          assert.equal((await env.request('POST', '/api/v1/conversions', { body })).status, 201, currency);
          const res = await pixel(await offer({}), { currency, amount: '1', payout: '1' });
          assert.equal(res.status, 200, `${currency}: ${JSON.stringify(res.body)}`);
        }
        for (const currency of ['CLF', 'USN', 'BOV', 'CHE', 'USD']) {
          const brand = await env.request('PATCH', '/api/v1/brand', { body: { currency } });
          assert.equal(brand.body.currency, currency);
        }
      });

      it('refuses codes ISO has withdrawn (HRK, SLL, ZWL) wherever a currency is given', async () => {
        const offerId = await offer({});
        const partnerId = await partner();
        for (const currency of ['HRK', 'SLL', 'ZWL']) {
          const requests = [
            ['POST', '/api/v1/offers', { name: 'O', destinationUrl: 'https://shop.example/', currency }],
            ['PATCH', `/api/v1/offers/${offerId}`, { currency }],
            ['POST', '/api/v1/conversions', { offerId, partnerId, currency, revenueCents: 1, payoutCents: 1 }],
            ['PATCH', '/api/v1/brand', { currency }],
          ] as const;
          for (const [method, path, body] of requests) {
            const error = expectError(await env.request(method, path, { body }), 422, 'validation_error');
            assert.equal(error.details?.[0]?.path, 'currency', `${method} ${path} ${currency}`);
          }
          const res = await pixel(offerId, { currency, amount: '1', payout: '1' });
          assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'query.currency', currency);
        }
      });

      it('still reads and converts an offer stored in a code withdrawn since (HRK), with its 2 decimals', async () => {
        const offerId = await offer({ revenueCents: 5000 });
        await env.ctx.db.transact((trx) =>
          trx.updateTable('offers').set({ currency: 'HRK' }).where('id', '=', offerId).execute(),
        );
        const read = await env.request('GET', `/api/v1/offers/${offerId}`);
        assert.deepEqual([read.status, read.body.currency, read.body.revenueCents], [200, 'HRK', 5000]);
        assert.equal((await pixel(offerId, { amount: '12.50' })).status, 200);
        const [conversion] = await conversionsOf(offerId);
        assert.deepEqual([conversion?.currency, conversion?.revenueCents], ['HRK', 1250]);
      });
    });
  });
}
