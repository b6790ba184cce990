import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv } from '../payouts/http.js';
import { invitedPartner, type PortalClient } from '../portal/client.js';

const ROUTES = ['/api/v1/partner/report', '/api/v1/partner/conversions', '/api/v1/partner/offers'];

/** Creates a key on the portal's API keys page; returns the secret shown once and the key id. */
async function createKey(client: PortalClient, name = 'Script'): Promise<{ secret: string; id: string }> {
  await client.get('/portal/api-keys');
  const page = await client.post('/portal/api-keys', { name });
  assert.equal(page.status, 200, page.body.slice(0, 300));
  const secret = /value="(afp_[A-Za-z0-9_-]+)"/.exec(page.body)?.[1];
  assert.ok(secret, 'the new key is shown');
  assert.match(page.body, /Authorization: Bearer &lt;key>/, 'the placeholder is text, not a tag');
  const id = /\/portal\/api-keys\/(pkey_[A-Z0-9]+)\/revoke/.exec(page.body)?.[1];
  assert.ok(id);
  return { secret, id };
}

for (const dialect of testedDialects()) {
  describe(`partner API over HTTP (${dialect})`, () => {
    let env: HttpEnv;
    let offerId: string;
    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      offerId = (
        await env.http('POST', '/api/v1/offers', {
          body: {
            name: 'Open offer',
            destinationUrl: 'https://shop.example/',
            revenueCents: 424242,
            payoutCents: 900,
            conversionStatus: 'approved',
          },
        })
      ).body.id;
      await env.http('POST', '/api/v1/offers', {
        body: { name: 'Paused offer', destinationUrl: 'https://shop.example/', status: 'paused' },
      });
    });
    after(() => env.close());

    it("answers with the partner's own report, conversions and offers, without the brand's revenue", async () => {
      const me = await invitedPartner(env, 'Api Me');
      const other = await invitedPartner(env, 'Api Other');
      const mine = await env.http('POST', '/api/v1/conversions', {
        body: { offerId, partnerId: me.partnerId, sub1: 'a' },
      });
      const theirs = await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId: other.partnerId } });
      const { secret } = await createKey(me.client);
      assert.match(secret, /^afp_[A-Za-z0-9_-]{32}$/);

      const conversions = await env.http('GET', '/api/v1/partner/conversions', { key: secret });
      assert.equal(conversions.status, 200);
      assert.deepEqual(
        conversions.body.data.map((c: { id: string }) => c.id),
        [mine.body.id],
      );
      assert.equal(conversions.body.data[0].payoutCents, 900);
      assert.equal(conversions.body.data[0].sub1, 'a');
      assert.ok(!JSON.stringify(conversions.body).includes(theirs.body.id));
      assert.ok(!('revenueCents' in conversions.body.data[0]));
      assert.ok(!JSON.stringify(conversions.body).includes('424242'));

      const filtered = await env.http('GET', '/api/v1/partner/conversions?status=pending', { key: secret });
      assert.deepEqual(filtered.body.data, []);
      expectError(
        await env.http('GET', '/api/v1/partner/conversions?from=2026-02-30', { key: secret }),
        422,
        'validation_error',
      );
      const reversed = expectError(
        await env.http('GET', '/api/v1/partner/conversions?from=2026-11-27&to=2026-11-26', { key: secret }),
        422,
        'validation_error',
      );
      assert.deepEqual(reversed.details, [{ path: 'query.from', message: 'must not be after to' }]);

      const report = await env.http('GET', '/api/v1/partner/report', { key: secret });
      assert.equal(report.status, 200);
      // totalsByCurrency as on GET /reports; the old `totals` array is kept (deprecated) with the same entries.
      assert.deepEqual(
        report.body.totalsByCurrency.map((t: Record<string, unknown>) => [t.currency, t.conversions, t.payoutCents]),
        [['USD', 1, 900]],
      );
      assert.deepEqual(report.body.totals, report.body.totalsByCurrency);
      assert.ok(!JSON.stringify(report.body).includes('revenueCents'));

      const offers = await env.http('GET', '/api/v1/partner/offers', { key: secret });
      assert.equal(offers.status, 200);
      assert.deepEqual(
        offers.body.data.map((o: { name: string }) => o.name),
        ['Open offer'],
      );
      assert.match(offers.body.data[0].trackingUrl, new RegExp(`/t/${offerId}/${me.partnerId}$`));
      assert.ok(!JSON.stringify(offers.body).includes('424242'));
      assert.ok(Number(offers.headers.get('ratelimit-limit')) > 0);
    });

    it('pages the offers and conversions with the nextCursor each list returned', async () => {
      await env.http('POST', '/api/v1/offers', {
        body: { name: 'Second open offer', destinationUrl: 'https://shop.example/2', conversionStatus: 'approved' },
      });
      const me = await invitedPartner(env, 'Pager');
      const { secret } = await createKey(me.client);
      for (let i = 0; i < 2; i++) {
        const res = await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId: me.partnerId } });
        assert.equal(res.status, 201);
      }
      for (const path of ['/api/v1/partner/offers', '/api/v1/partner/conversions']) {
        const first = await env.http('GET', `${path}?limit=1`, { key: secret });
        assert.equal(first.body.data.length, 1, path);
        assert.equal(typeof first.body.nextCursor, 'string', path);
        const second = await env.http('GET', `${path}?limit=1&cursor=${first.body.nextCursor}`, { key: secret });
        assert.equal(second.status, 200, `${path}: ${JSON.stringify(second.body)}`);
        assert.equal(second.body.data.length, 1, path);
        assert.notEqual(second.body.data[0].id, first.body.data[0].id, path);
      }
    });

    it('keeps brand keys and partner keys apart, and shows another brand nothing', async () => {
      const me = await invitedPartner(env, 'Apart Keys');
      const { secret } = await createKey(me.client);
      for (const path of ROUTES) {
        // The brand's own key: still 401, saying which key these routes take.
        const brandKey = expectError(await env.http('GET', path), 401, 'unauthorized');
        assert.match(
          brandKey.message,
          /^This is a brand API key \(afk_…\); the partner API .* partner API key \(afp_…\)/,
        );
        expectError(await env.http('GET', path, { key: null }), 401, 'unauthorized');
        expectError(await env.http('GET', path, { key: `${secret}x` }), 401, 'unauthorized');
      }
      for (const path of ['/api/v1/offers', '/api/v1/conversions', '/api/v1/payouts', '/api/public/webhooks']) {
        expectError(await env.http('GET', path, { key: secret }), 401, 'unauthorized');
      }
      const otherBrand = await env.createBrand('Api Other Brand');
      const stranger = await invitedPartner(env, 'Stranger', otherBrand.apiKey);
      const strangerKey = (await createKey(stranger.client)).secret;
      const offers = await env.http('GET', '/api/v1/partner/offers', { key: strangerKey });
      assert.deepEqual(offers.body.data, []);
      // Another brand's offer is no offer of the partner's brand: 422, as on every list filtered by id.
      const conversions = await env.http('GET', `/api/v1/partner/conversions?offerId=${offerId}`, { key: strangerKey });
      const error = expectError(conversions, 422, 'validation_error');
      assert.deepEqual(error.details, [{ path: 'query.offerId', message: 'no offer with this id' }]);
      assert.deepEqual((await env.http('GET', '/api/v1/partner/conversions', { key: strangerKey })).body.data, []);
      const strangerReport = await env.http('GET', '/api/v1/partner/report', { key: strangerKey });
      assert.equal(strangerReport.status, 200);
      assert.ok(!JSON.stringify(strangerReport.body).includes(offerId));
      assert.equal(
        strangerReport.body.totals.reduce((n: number, t: { conversions: number }) => n + t.conversions, 0),
        0,
      );
    });

    it('stops answering a revoked key and the keys of a banned partner', async () => {
      const me = await invitedPartner(env, 'Revoker');
      const first = await createKey(me.client, 'first');
      const second = await createKey(me.client, 'second');
      assert.equal((await env.http('GET', '/api/v1/partner/offers', { key: first.secret })).status, 200);
      const revoked = await me.client.post(`/portal/api-keys/${first.id}/revoke`);
      assert.equal(revoked.status, 303);
      expectError(await env.http('GET', '/api/v1/partner/offers', { key: first.secret }), 401, 'unauthorized');
      assert.equal((await env.http('GET', '/api/v1/partner/offers', { key: second.secret })).status, 200);
      const other = await invitedPartner(env, 'Not the owner');
      await other.client.get('/portal/api-keys');
      assert.equal((await other.client.post(`/portal/api-keys/${second.id}/revoke`)).status, 404);
      await env.http('POST', `/api/v1/partners/${me.partnerId}/ban`);
      expectError(await env.http('GET', '/api/v1/partner/offers', { key: second.secret }), 401, 'unauthorized');
    });

    it('documents the partner API under its own tag with the partner key scheme', async () => {
      const doc = await env.http('GET', '/api/v1/openapi.json', { key: null });
      assert.equal(doc.body.components.securitySchemes.partnerKey.scheme, 'bearer');
      for (const path of ROUTES) {
        const op = doc.body.paths[path].get;
        assert.deepEqual(op.tags, ['partner API'], path);
        assert.deepEqual(op.security, [{ partnerKey: [] }], path);
      }
      for (const [path, method] of [
        ['/api/v1/payouts', 'post'],
        ['/api/v1/payouts/{id}', 'get'],
        ['/api/v1/payouts/{id}/mark-paid', 'post'],
        ['/api/v1/payouts/{id}/cancel', 'post'],
        ['/api/v1/partners/{id}/invite', 'post'],
      ] as const) {
        assert.deepEqual(doc.body.paths[path][method].security, [{ bearerAuth: [] }], path);
      }
      const report = doc.body.components.schemas.PartnerReport.properties;
      assert.equal(report.totalsByCurrency.items.$ref, '#/components/schemas/PartnerReportTotals');
      assert.equal(report.totals.deprecated, true);
      assert.match(report.totals.description, /^Deprecated/);
    });
  });

  describe(`partner API days in a brand time zone far from UTC (${dialect})`, () => {
    let env: HttpEnv;
    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    });
    after(() => env.close());

    it('filters the conversions list by the same brand-local days the report counts', async () => {
      // UTC+14: the test clock's 2026-11-21T10:00Z is 2026-11-22 00:00 there.
      const brand = await env.http('PATCH', '/api/v1/brand', { body: { timezone: 'Pacific/Kiritimati' } });
      assert.equal(brand.status, 200, JSON.stringify(brand.body));
      const offerId = (
        await env.http('POST', '/api/v1/offers', {
          body: { name: 'Far east', destinationUrl: 'https://shop.example/', payoutCents: 500 },
        })
      ).body.id;
      const me = await invitedPartner(env, 'Kiritimati');
      const { secret } = await createKey(me.client);
      const made = await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId: me.partnerId } });
      assert.equal(made.status, 201);
      assert.equal(made.body.createdAt, '2026-11-21T10:00:00.000Z');

      const ids = async (path: string, key?: string) =>
        (await env.http('GET', path, { key })).body.data.map((c: { id: string }) => c.id);
      const report = await env.http('GET', '/api/v1/partner/report?from=2026-11-22&to=2026-11-22', { key: secret });
      assert.deepEqual(
        report.body.totals.map((t: { conversions: number }) => t.conversions),
        [1],
      );
      assert.deepEqual(await ids('/api/v1/partner/conversions?from=2026-11-22&to=2026-11-22', secret), [made.body.id]);
      assert.deepEqual(await ids('/api/v1/partner/conversions?from=2026-11-21&to=2026-11-21', secret), []);
      assert.deepEqual(
        await ids(`/api/v1/conversions?from=2026-11-22&to=2026-11-22&partnerId=${me.partnerId}`),
        [made.body.id],
        "the brand's list agrees",
      );
    });
  });

  describe(`partner API rate limit (${dialect})`, () => {
    let env: HttpEnv;
    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '3' } });
    });
    after(() => env.close());

    it('answers 429 with Retry-After once a key has used its requests of the minute', async () => {
      const me = await invitedPartner(env, 'Limited');
      const { secret } = await createKey(me.client);
      const statuses: number[] = [];
      let last: Awaited<ReturnType<HttpEnv['http']>> | null = null;
      for (let i = 0; i < 4; i++) {
        last = await env.http('GET', '/api/v1/partner/offers', { key: secret });
        statuses.push(last.status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.ok(last);
      expectError(last, 429, 'rate_limit_exceeded');
      assert.ok(Number(last.headers.get('retry-after')) > 0);
      env.clock.advance(61_000);
      assert.equal((await env.http('GET', '/api/v1/partner/offers', { key: secret })).status, 200);
    });
  });
}
