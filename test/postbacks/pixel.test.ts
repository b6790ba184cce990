import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Conversion } from '../../src/modules/conversions/schemas.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const BROWSER = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0';
const HOME_IP = '81.2.69.142';
const NO_API_LIMIT = { RATE_LIMIT_PER_MINUTE: '100000' };

/** What every pixel test needs: offers, partners, clicks through the tracking link, and the pixel itself. */
function helpers(getEnv: () => TestEnv) {
  const h = {
    async offer(body: Record<string, unknown> = {}): Promise<string> {
      const res = await getEnv().request('POST', '/api/v1/offers', {
        body: { name: 'Offer', destinationUrl: 'https://shop.example/', revenueCents: 900, payoutCents: 300, ...body },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    },
    async partner(): Promise<string> {
      const res = await getEnv().request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    },
    async token(offerId: string): Promise<string> {
      const res = await getEnv().request('GET', `/api/v1/offers/${offerId}/postback-token`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.token;
    },
    /** Follows the tracking link and returns the new click's id as GET /api/v1/clicks lists it. */
    async click(offerId: string, partnerId: string, visit: { ip?: string; ua?: string; search?: string } = {}) {
      const res = await getEnv().app.inject({
        url: `/t/${offerId}/${partnerId}${visit.search ? `?${visit.search}` : ''}`,
        headers: { 'user-agent': visit.ua ?? BROWSER },
        remoteAddress: visit.ip ?? HOME_IP,
      });
      assert.equal(res.statusCode, 302, res.body);
      const list = await getEnv().request('GET', `/api/v1/clicks?offerId=${offerId}&partnerId=${partnerId}`);
      return list.body.data[0] as { id: string; highRisk: boolean };
    },
    /** An offer, an active partner, a click and the offer's token. */
    async setup(offerBody: Record<string, unknown> = {}) {
      const offerId = await h.offer(offerBody);
      const partnerId = await h.partner();
      const click = await h.click(offerId, partnerId);
      return { offerId, partnerId, clickId: click.id, token: await h.token(offerId) };
    },
    async pixel(params: Record<string, string>) {
      const res = await getEnv().app.inject({ url: `/postback?${new URLSearchParams(params)}` });
      const json = String(res.headers['content-type']).includes('json');
      return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, body: json ? res.json() : res.body };
    },
    async conversions(offerId: string): Promise<Conversion[]> {
      return (await getEnv().request('GET', `/api/v1/conversions?offerId=${offerId}`)).body.data;
    },
    async createdEvents(offerId: string) {
      const rows = await getEnv()
        .ctx.db.read.selectFrom('events')
        .select('payload')
        .where('type', '=', 'conversion.created')
        .execute();
      return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.offerId === offerId);
    },
  };
  return h;
}

for (const dialect of testedDialects()) {
  describe(`pixel postbacks (${dialect})`, () => {
    let env: TestEnv;
    const h = helpers(() => env);
    before(async () => {
      env = await createTestEnv(dialect, { env: NO_API_LIMIT });
    });
    after(() => env.close());

    describe('GET and POST /api/v1/offers/:id/postback-token', () => {
      it("returns the offer's pbt_ token with a ready-made pixel URL, the same on a second GET", async () => {
        const offerId = await h.offer();
        const first = await env.request('GET', `/api/v1/offers/${offerId}/postback-token`);
        assert.equal(first.status, 200);
        assert.deepEqual(Object.keys(first.body).sort(), ['offerId', 'postbackUrl', 'token']);
        assert.equal(first.body.offerId, offerId);
        assert.match(first.body.token, /^pbt_[A-Za-z0-9_-]{20,}$/);
        const url = new URL(first.body.postbackUrl);
        assert.equal(url.pathname, '/postback');
        assert.equal(url.searchParams.get('token'), first.body.token);
        assert.deepEqual((await env.request('GET', `/api/v1/offers/${offerId}/postback-token`)).body, first.body);
      });

      it('gives concurrent first requests one and the same token', async () => {
        const offerId = await h.offer();
        const answers = await Promise.all(
          Array.from({ length: 5 }, () => env.request('GET', `/api/v1/offers/${offerId}/postback-token`)),
        );
        const tokens = new Set(answers.map((a) => a.body.token));
        assert.equal(tokens.size, 1, JSON.stringify([...tokens]));
        assert.equal((await env.request('GET', `/api/v1/offers/${offerId}/postback-token`)).body.token, [...tokens][0]);
      });

      it('gives each offer its own token', async () => {
        assert.notEqual(await h.token(await h.offer()), await h.token(await h.offer()));
      });

      it("answers 404 for an unknown offer or another brand's offer", async () => {
        const other = await env.createBrand('Other');
        const theirs = await env.request('POST', '/api/v1/offers', {
          body: { name: 'O', destinationUrl: 'https://shop.example/' },
          key: other.apiKey,
        });
        for (const id of ['off_00000000000000000000000000', theirs.body.id]) {
          expectError(await env.request('GET', `/api/v1/offers/${id}/postback-token`), 404, 'not_found');
          expectError(await env.request('POST', `/api/v1/offers/${id}/postback-token`), 404, 'not_found');
        }
      });

      it('rotates the token on POST: the old one is then refused with 401 and the new one works', async () => {
        const { offerId, clickId, token: old } = await h.setup();
        const rotated = await env.request('POST', `/api/v1/offers/${offerId}/postback-token`);
        assert.equal(rotated.status, 200);
        assert.match(rotated.body.token, /^pbt_/);
        assert.notEqual(rotated.body.token, old);
        assert.equal(new URL(rotated.body.postbackUrl).searchParams.get('token'), rotated.body.token);
        assert.equal(await h.token(offerId), rotated.body.token);
        expectError(await h.pixel({ token: old, click_id: clickId, txn_id: 'T-OLD' }), 401, 'unauthorized');
        const fresh = await h.pixel({ token: rotated.body.token, click_id: clickId, txn_id: 'T-NEW' });
        assert.equal(fresh.status, 200);
        assert.deepEqual(
          (await h.conversions(offerId)).map((c) => c.externalTxnId),
          ['T-NEW'],
        );
      });
    });

    describe('GET /postback', () => {
      it('records a conversion for the click from amount, sub1 and txn_id, answering 200 OK as text/plain', async () => {
        const { offerId, partnerId, clickId, token } = await h.setup();
        const res = await h.pixel({ token, click_id: clickId, amount: '12.50', txn_id: 'ORD-77', sub1: 'spring sale' });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^text\/plain/);
        assert.equal(res.body, 'OK');
        const [conversion, ...more] = await h.conversions(offerId);
        assert.ok(conversion && more.length === 0);
        assert.deepEqual(
          [conversion.clickId, conversion.partnerId, conversion.revenueCents, conversion.payoutCents],
          [clickId, partnerId, 1250, 300],
        );
        assert.deepEqual(
          [conversion.sub1, conversion.externalTxnId, conversion.currency],
          ['spring sale', 'ORD-77', 'USD'],
        );
        const [event] = await h.createdEvents(offerId);
        assert.deepEqual([event?.data.conversionId, event?.data.revenueCents], [conversion.id, 1250]);
      });

      it("refuses a currency other than the offer's without both amounts (422 naming the parameter), and takes it with both", async () => {
        const { offerId, clickId, token } = await h.setup();
        const res = await h.pixel({ token, click_id: clickId, amount: '12.50', currency: 'EUR', txn_id: 'EUR-1' });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['query.payout'],
        );
        assert.equal((await h.conversions(offerId)).length, 0);
        const both = await h.pixel({ token, click_id: clickId, amount: '12.50', payout: '2', currency: 'eur' });
        assert.equal(both.status, 200, JSON.stringify(both.body));
        const [conversion] = await h.conversions(offerId);
        assert.deepEqual([conversion?.currency, conversion?.revenueCents, conversion?.payoutCents], ['EUR', 1250, 200]);
      });

      it("names an example amount in the offer's own decimals when one is malformed (1250 for JPY)", async () => {
        const { clickId, token } = await h.setup({ currency: 'JPY' });
        const res = await h.pixel({ token, click_id: clickId, amount: '12.5' });
        const error = expectError(res, 422, 'validation_error');
        assert.equal(error.details?.[0]?.message, 'must be an amount in JPY such as 1250');
      });

      it('records a conversion whose sub-id a Latin-1 server %-escaped (as the parser reads it)', async () => {
        const { offerId, clickId, token } = await h.setup();
        const res = await env.app.inject({ url: `/postback?token=${token}&click_id=${clickId}&sub1=caf%E9` });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal((await h.conversions(offerId)).length, 1);
      });

      it('keeps the token out of the request log', async () => {
        const { clickId, token } = await h.setup();
        const before = env.logs.length;
        assert.equal((await h.pixel({ token, click_id: clickId })).status, 200);
        const written = env.logs.slice(before).join('');
        assert.match(written, /\/postback/);
        assert.ok(!written.includes(token), 'the token was logged');
      });

      it('answers a 1×1 GIF with pixel=1', async () => {
        const { offerId, clickId, token } = await h.setup();
        const res = await h.pixel({ token, click_id: clickId, pixel: '1' });
        assert.equal(res.status, 200);
        assert.equal(res.headers['content-type'], 'image/gif');
        assert.match(res.raw.subarray(0, 6).toString('latin1'), /^GIF8[79]a$/);
        assert.deepEqual([res.raw.readUInt16LE(6), res.raw.readUInt16LE(8)], [1, 1]);
        assert.ok(res.raw.length >= 35 && res.raw.length <= 64, `${res.raw.length} bytes`);
        assert.equal((await h.conversions(offerId)).length, 1);
      });

      it('answers 200 to a repeated txn_id but keeps one conversion and one conversion.created event', async () => {
        const { offerId, clickId, token } = await h.setup();
        const first = await h.pixel({ token, click_id: clickId, txn_id: 'ORD-DUP', amount: '5.00' });
        env.clock.advance(1_000);
        const again = await h.pixel({ token, click_id: clickId, txn_id: 'ORD-DUP', amount: '9.00' });
        assert.deepEqual([first.status, first.body, again.status, again.body], [200, 'OK', 200, 'OK']);
        const conversions = await h.conversions(offerId);
        assert.deepEqual(
          conversions.map((c) => c.revenueCents),
          [500],
        );
        assert.equal((await h.createdEvents(offerId)).length, 1);
      });

      it('refuses a click of another offer with 422 and records nothing', async () => {
        const { offerId, token } = await h.setup();
        const elsewhere = await h.setup();
        const res = await h.pixel({ token, click_id: elsewhere.clickId });
        assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'query.click_id');
        assert.equal((await h.conversions(offerId)).length, 0);
        assert.equal((await h.conversions(elsewhere.offerId)).length, 0);
      });

      it('refuses an unknown click with 422', async () => {
        const { token } = await h.setup();
        const res = await h.pixel({ token, click_id: 'clk_00000000000000000000000000' });
        assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'query.click_id');
      });

      it('refuses a request without a token, or without a click_id, with 422', async () => {
        const { clickId, token } = await h.setup();
        expectError(await h.pixel({ click_id: clickId }), 422, 'validation_error');
        expectError(await h.pixel({ token: '', click_id: clickId }), 422, 'validation_error');
        expectError(await h.pixel({ token }), 422, 'validation_error');
      });

      it('refuses a wrong token with 401', async () => {
        const { offerId, clickId, token } = await h.setup();
        for (const wrong of [`${token}x`, 'pbt_doesnotexist', 'nonsense']) {
          expectError(await h.pixel({ token: wrong, click_id: clickId }), 401, 'unauthorized');
        }
        assert.equal((await h.conversions(offerId)).length, 0);
      });

      it('refuses an amount that is not a valid amount with 422', async () => {
        const { offerId, clickId, token } = await h.setup();
        for (const amount of ['abc', '-1', '1.234', '1e3', '12,50']) {
          const res = await h.pixel({ token, click_id: clickId, amount });
          assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'query.amount', amount);
        }
        assert.equal((await h.conversions(offerId)).length, 0);
      });

      it('refuses amounts above the API bound (10,000,000,000.00), as POST /conversions does', async () => {
        const { offerId, clickId, token } = await h.setup();
        for (const field of ['amount', 'payout']) {
          const res = await h.pixel({ token, click_id: clickId, [field]: '10000000000.01' });
          const error = expectError(res, 422, 'validation_error');
          assert.deepEqual(
            [error.details?.[0]?.path, error.details?.[0]?.message],
            [`query.${field}`, 'must be at most 10000000000.00, as on POST /api/v1/conversions'],
          );
        }
        assert.equal((await h.pixel({ token, click_id: clickId, amount: '10000000000.00' })).status, 200);
        assert.deepEqual(
          (await h.conversions(offerId)).map((c) => c.revenueCents),
          [1_000_000_000_000],
        );
      });

      it('leaves a conversion whose payout the pixel set pending for a person, on an offer that starts approved', async () => {
        const { offerId, clickId, token } = await h.setup({ conversionStatus: 'approved', holdSeconds: 60 });
        assert.equal((await h.pixel({ token, click_id: clickId, amount: '20.00', txn_id: 'OFFER-PAY' })).status, 200);
        const set = await h.pixel({ token, click_id: clickId, amount: '20.00', payout: '5000.00', txn_id: 'SET-PAY' });
        assert.equal(set.status, 200);
        const byTxn = Object.fromEntries(
          (await h.conversions(offerId)).map((c) => [c.externalTxnId, [c.status, c.payoutCents, c.holdUntil]]),
        );
        assert.deepEqual(byTxn, { 'OFFER-PAY': ['approved', 300, null], 'SET-PAY': ['pending', 500000, null] });
      });

      it("refuses with 409 a transaction id first reported for another partner's click, by pixel and by the API", async () => {
        const { offerId, partnerId, clickId, token } = await h.setup();
        const rival = await h.partner();
        const rivalClick = await h.click(offerId, rival);
        assert.equal((await h.pixel({ token, click_id: rivalClick.id, txn_id: 'ORDER-7001' })).status, 200);
        const real = await h.pixel({ token, click_id: clickId, txn_id: 'ORDER-7001' });
        assert.match(expectError(real, 409, 'conflict').message, /another partner/);
        const api = await env.request('POST', '/api/v1/conversions', {
          body: { clickId, externalTxnId: 'ORDER-7001' },
        });
        expectError(api, 409, 'conflict');
        const repeat = await h.pixel({ token, click_id: rivalClick.id, txn_id: 'ORDER-7001' });
        assert.equal(repeat.status, 200, 'the same partner repeating is still a repeat');
        const stored = await h.conversions(offerId);
        assert.deepEqual(
          stored.map((c) => c.partnerId),
          [rival],
        );
        assert.notEqual(rival, partnerId);
      });

      it("refuses a request from this service's own sender (a postback pointed at its pixel would loop)", async () => {
        const { offerId, clickId, token } = await h.setup();
        const res = await env.app.inject({
          url: `/postback?${new URLSearchParams({ token, click_id: clickId, txn_id: 'LOOP-1' })}`,
          headers: { 'user-agent': 'Affitrack-Webhooks/1.0' },
        });
        assert.equal(
          expectError({ status: res.statusCode, body: res.json() }, 422, 'validation_error').details?.[0]?.path,
          'header.User-Agent',
        );
        assert.equal((await h.conversions(offerId)).length, 0);
      });

      it('answers a bad token 401 without WWW-Authenticate, as its OpenAPI response says (the token is no HTTP auth scheme)', async () => {
        const { clickId } = await h.setup();
        const res = await h.pixel({ token: 'pbt_nope', click_id: clickId });
        expectError(res, 401, 'unauthorized');
        assert.equal(res.headers['www-authenticate'], undefined);
      });

      it('has no HEAD route: HEAD /postback is 404 and records nothing, so a link checker never converts', async () => {
        const { offerId, clickId, token } = await h.setup();
        const res = await env.app.inject({
          method: 'HEAD',
          url: `/postback?${new URLSearchParams({ token, click_id: clickId, txn_id: 'HEAD-1' })}`,
        });
        assert.equal(res.statusCode, 404);
        assert.equal((await h.conversions(offerId)).length, 0);
      });

      it('never accepts the API key in place of the token, not even with the key also in the header', async () => {
        const { offerId, clickId } = await h.setup();
        expectError(await h.pixel({ token: env.brand.apiKey, click_id: clickId }), 401, 'unauthorized');
        const withHeader = await env.app.inject({
          url: `/postback?${new URLSearchParams({ token: env.brand.apiKey, click_id: clickId })}`,
          headers: { authorization: `Bearer ${env.brand.apiKey}` },
        });
        expectError({ status: withHeader.statusCode, body: withHeader.json() }, 401, 'unauthorized');
        assert.equal((await h.conversions(offerId)).length, 0);
      });

      it('applies the cap rule: over a daily cap of 1 the second conversion is capExceeded and pending', async () => {
        const { offerId, partnerId, clickId, token } = await h.setup({
          caps: { daily: 1 },
          conversionStatus: 'approved',
        });
        const second = await h.click(offerId, partnerId);
        assert.equal((await h.pixel({ token, click_id: clickId, txn_id: 'CAP-1' })).status, 200);
        assert.equal((await h.pixel({ token, click_id: second.id, txn_id: 'CAP-2' })).status, 200);
        const byTxn = Object.fromEntries(
          (await h.conversions(offerId)).map((c) => [c.externalTxnId, [c.capExceeded, c.status]]),
        );
        assert.deepEqual(byTxn, { 'CAP-1': [false, 'approved'], 'CAP-2': [true, 'pending'] });
      });

      it('applies the fraud rule: a high-risk click gives a pending conversion on an offer that starts approved', async () => {
        const offerId = await h.offer({ conversionStatus: 'approved' });
        const partnerId = await h.partner();
        const risky = await h.click(offerId, partnerId, { ua: 'curl/8.5.0', ip: '3.5.140.1' });
        const clean = await h.click(offerId, partnerId);
        assert.deepEqual([risky.highRisk, clean.highRisk], [true, false]);
        const token = await h.token(offerId);
        assert.equal((await h.pixel({ token, click_id: risky.id, txn_id: 'RISKY' })).status, 200);
        assert.equal((await h.pixel({ token, click_id: clean.id, txn_id: 'CLEAN' })).status, 200);
        const byTxn = Object.fromEntries((await h.conversions(offerId)).map((c) => [c.externalTxnId, c.status]));
        assert.deepEqual(byTxn, { RISKY: 'pending', CLEAN: 'approved' });
      });
    });
  });

  describe(`pixel postback rate limit (${dialect})`, () => {
    let env: TestEnv;
    const h = helpers(() => env);
    before(async () => {
      env = await createTestEnv(dialect, { env: { ...NO_API_LIMIT, POSTBACK_RATE_LIMIT_PER_MINUTE: '3' } });
    });
    after(() => env.close());

    it("answers 429 with Retry-After to a token's 4th request in a minute while another offer's token works, and lets it through after Retry-After", async () => {
      const limited = await h.setup();
      const other = await h.setup();
      for (let i = 1; i <= 3; i++) {
        const res = await h.pixel({ token: limited.token, click_id: limited.clickId, txn_id: `RL-${i}` });
        assert.equal(res.status, 200, `request ${i}`);
      }
      const refused = await h.pixel({ token: limited.token, click_id: limited.clickId, txn_id: 'RL-4' });
      expectError(refused, 429, 'rate_limit_exceeded');
      const retryAfter = Number(refused.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
      assert.equal((await h.conversions(limited.offerId)).length, 3);
      assert.equal((await h.pixel({ token: other.token, click_id: other.clickId, txn_id: 'OTHER' })).status, 200);
      env.clock.advance(retryAfter * 1000);
      assert.equal((await h.pixel({ token: limited.token, click_id: limited.clickId, txn_id: 'RL-5' })).status, 200);
    });
  });
}
