import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import * as canonicalTimeZones from '../../src/db/migrations/0036_canonical_time_zones.js';
import * as ianaTimeZoneNames from '../../src/db/migrations/0039_iana_time_zone_names.js';
import { insertApiKey } from '../../src/modules/apiKeys/service.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { listen, type WireClient, type WireResponse } from './http.js';

function expectWireError(res: WireResponse, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.code, code, JSON.stringify(res.body));
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.error.requestId, res.headers.get('x-request-id'), 'requestId is the X-Request-Id header');
  return res.body.error as { code: string; message: string; details?: Array<{ path: string; message: string }> };
}

function detail(error: { details?: Array<{ path: string; message: string }> }, path: string): string {
  const found = error.details?.filter((d) => d.path === path) ?? [];
  assert.equal(found.length, 1, `one detail for ${path} in ${JSON.stringify(error.details)}`);
  return (found[0] as { message: string }).message;
}

for (const dialect of testedDialects()) {
  describe(`Error contract over HTTP (${dialect})`, () => {
    let env: TestEnv;
    let http: WireClient;
    let offerId: string;
    let partnerId: string;
    before(async () => {
      // Every keyed answer counts, refusals included, and the clock stands still: room for the whole file.
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '1000' } });
      http = await listen(env);
      const offer = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Shoes', destinationUrl: 'https://shop.example/' },
      });
      offerId = offer.body.id;
      const partner = await http.call('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      partnerId = partner.body.id;
    });
    after(() => env.close());

    it('lists every problem of an offer at once, each naming what is allowed', async () => {
      const res = await http.call('POST', '/api/v1/offers', {
        body: { name: 'X', destinationUrl: 'ftp://nope', status: 'exploded', currency: 'XXQ', colour: 'red' },
      });
      const error = expectWireError(res, 422, 'validation_error');
      assert.equal(detail(error, 'status'), 'must be one of "active", "paused", "archived"');
      assert.match(detail(error, 'currency'), /ISO 4217/);
      assert.match(detail(error, 'destinationUrl'), /absolute http\(s\) URL/);
      assert.equal(detail(error, 'colour'), 'is not a known field');
      assert.equal(error.details?.length, 4);
      assert.doesNotMatch(JSON.stringify(error), /equal to constant|anyOf/);
    });

    it('names the allowed events for an unknown event name, once', async () => {
      const res = await http.call('POST', '/api/public/webhooks', {
        body: { url: 'https://hooks.example/x', events: ['conversion.created', 'conversion.exploded'] },
      });
      const error = expectWireError(res, 422, 'validation_error');
      const message = detail(error, 'events.1');
      assert.match(message, /^must be one of "conversion\.created", /);
      assert.match(message, /"cap\.reached"/);
      assert.equal(error.details?.length, 1);
    });

    it('names the allowed values of an enum in a query string', async () => {
      const error = expectWireError(
        await http.call('GET', '/api/v1/conversions?status=bogus'),
        422,
        'validation_error',
      );
      assert.equal(detail(error, 'query.status'), 'must be one of "pending", "approved", "rejected"');
    });

    it('takes integer query parameters in decimal digits only', async () => {
      for (const limit of ['0x10', '0b11', '1e2', '%205', '5%20', '+5', '%0A5', '2.0', '0o7']) {
        const res = await http.call('GET', `/api/v1/offers?limit=${limit}`);
        assert.equal(detail(expectWireError(res, 422, 'validation_error'), 'query.limit'), 'must be an integer', limit);
      }
      const preview = await http.call('GET', '/api/v1/payouts/preview?upTo=2020-01-01T00:00:00Z&minimumCents=1e3');
      assert.equal(
        detail(expectWireError(preview, 422, 'validation_error'), 'query.minimumCents'),
        'must be an integer',
      );
      const both = await http.call('GET', '/api/v1/offers?limit=0x10&status=bogus');
      assert.equal(expectWireError(both, 422, 'validation_error').details?.length, 2, 'listed with the other problems');
      const ok = await http.call('GET', '/api/v1/offers?limit=2');
      assert.equal(ok.status, 200);
      assert.ok(ok.body.data.length <= 2);
      expectWireError(await http.call('GET', '/api/v1/offers?limit=-1'), 422, 'validation_error');
    });

    it('names query problems query.<name> on /api/public/events too', async () => {
      const res = await http.call('GET', '/api/public/events?since=2026-12-01T00:00:00Z&until=2026-11-01T00:00:00Z');
      assert.equal(detail(expectWireError(res, 422, 'validation_error'), 'query.until'), 'must be later than since');
    });

    it('describes a nullable field by both of its allowed forms', async () => {
      const res = await http.call('POST', `/api/v1/partners/${partnerId}/ban`, { body: { reason: 'x'.repeat(501) } });
      const error = expectWireError(res, 422, 'validation_error');
      assert.equal(detail(error, 'reason'), 'must be a string of at most 500 characters or null');
    });

    it('refuses unknown fields on action routes that take no body', async () => {
      const conversion = await http.call('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      assert.equal(conversion.status, 201);
      const refused = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/approve`, {
        body: { force: true },
      });
      assert.equal(detail(expectWireError(refused, 422, 'validation_error'), 'force'), 'is not a known field');
      const still = await http.call('GET', `/api/v1/conversions/${conversion.body.id}`);
      assert.equal(still.body.status, 'pending', 'the refused approve changed nothing');
      const approved = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/approve`, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(approved.status, 200, 'an empty body is still no body');
      assert.equal(approved.body.status, 'approved');
      const rejectExtra = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/reject`, {
        body: { reason: 'dup', extra: 1 },
      });
      assert.equal(detail(expectWireError(rejectExtra, 422, 'validation_error'), 'extra'), 'is not a known field');
      const approveAgain = await http.call('POST', `/api/v1/partners/${partnerId}/approve`, { body: { now: 1 } });
      expectWireError(approveAgain, 422, 'validation_error');
    });

    it('refuses unknown query parameters on every API operation, not only on lists', async () => {
      const secretInQuery = await http.call('POST', '/api/public/webhooks?secret=whsec_zzzzzzzzzzzzzzzz', {
        body: { url: 'https://hooks.example/query', events: ['*'] },
      });
      assert.equal(
        detail(expectWireError(secretInQuery, 422, 'validation_error'), 'query.secret'),
        'is not a known field',
      );
      const subscriptions = await http.call('GET', '/api/public/webhooks');
      assert.equal(subscriptions.status, 200);
      assert.ok(
        subscriptions.body.data.every((s: { url: string }) => s.url !== 'https://hooks.example/query'),
        'no unsigned subscription was created',
      );
      const ban = await http.call('POST', `/api/v1/partners/${partnerId}/ban?reason=fraud`);
      assert.equal(detail(expectWireError(ban, 422, 'validation_error'), 'query.reason'), 'is not a known field');
      assert.equal((await http.call('GET', `/api/v1/partners/${partnerId}`)).body.status !== 'banned', true);
      for (const [method, path] of [
        ['GET', '/api/v1/brand?x=1'],
        ['GET', `/api/v1/offers/${offerId}?expand=all`],
        ['PATCH', `/api/v1/offers/${offerId}?status=paused`],
        ['GET', '/api/public/webhook-events?x=1'],
        ['DELETE', '/api/v1/fraud/blocklist/blk_01KAZZZZZZZZZZZZZZZZZZZZZZ?force=1'],
      ] as const) {
        const res = await http.call(method, path, method === 'PATCH' ? { body: {} } : {});
        expectWireError(res, 422, 'validation_error');
      }
      const csv = await http.call('GET', '/api/v1/conversions?format=csv');
      assert.equal(csv.status, 200, 'documented parameters still work');
    });

    it('refuses any body on a DELETE, which takes none, and still deletes with an empty one', async () => {
      const entry = async (value: string) => {
        const res = await http.call('POST', '/api/v1/fraud/blocklist', { body: { type: 'ip', value } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.body.id as string;
      };
      const id = await entry('203.0.113.7');
      for (const raw of ['{"force":true}', '[]', '"x"', '123']) {
        const res = await http.call('DELETE', `/api/v1/fraud/blocklist/${id}`, { raw });
        expectWireError(res, 422, 'validation_error');
      }
      const forced = await http.call('DELETE', `/api/v1/fraud/blocklist/${id}`, { body: { force: true } });
      assert.equal(detail(expectWireError(forced, 422, 'validation_error'), 'force'), 'is not a known field');
      const list = await http.call('GET', '/api/v1/fraud/blocklist');
      assert.ok(
        list.body.data.some((e: { id: string }) => e.id === id),
        'the refused DELETEs removed nothing',
      );
      const empty = await http.call('DELETE', `/api/v1/fraud/blocklist/${id}`, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(empty.status, 204, 'an empty body is no body');
      assert.equal((await http.call('DELETE', `/api/v1/fraud/blocklist/${await entry('203.0.113.8')}`)).status, 204);
      const hook = await http.call('POST', '/api/public/webhooks', {
        body: { url: 'https://hooks.example/delete', events: ['*'] },
      });
      const deleted = await http.call('DELETE', `/api/public/webhooks/${hook.body.id}`, { body: {} });
      assert.equal(deleted.status, 204, 'an empty object has no unknown field');
    });

    it('answers 422 invalid_cursor for a malformed cursor on every list', async () => {
      for (const path of [
        '/api/v1/offers',
        '/api/v1/partners',
        '/api/v1/conversions',
        '/api/v1/clicks',
        '/api/v1/fraud/blocklist',
        '/api/public/webhooks',
        '/api/public/webhook-deliveries',
      ]) {
        const error = expectWireError(await http.call('GET', `${path}?cursor=garbage`), 422, 'invalid_cursor');
        assert.equal(error.details?.[0]?.path, 'query.cursor', path);
      }
      const both = expectWireError(
        await http.call('GET', '/api/v1/offers?cursor=garbage&status=bogus'),
        422,
        'validation_error',
      );
      assert.equal(both.details?.length, 2, 'a bad cursor among other problems is listed with them');
    });

    it('answers a cursor on an endpoint that takes none as an unknown field, not as a stale cursor', async () => {
      for (const path of ['/api/v1/reports', '/api/v1/brand']) {
        const error = expectWireError(await http.call('GET', `${path}?cursor=x`), 422, 'validation_error');
        assert.deepEqual(error.details, [{ path: 'query.cursor', message: 'is not a known field' }], path);
        assert.equal(error.message, 'Validation failed: query.cursor: is not a known field.', path);
      }
    });

    it('answers a long id or a malformed URL with the usual headers: the request id, and rate-limit counters once routed', async () => {
      const long = await http.call('GET', `/api/v1/offers/off_${'x'.repeat(300)}`);
      expectWireError(long, 404, 'not_found');
      assert.equal(long.body.error.message, 'Offer not found.');
      assert.equal(long.headers.get('x-request-id'), long.body.error.requestId);
      assert.notEqual(long.headers.get('ratelimit-remaining'), null);
      const malformed = await http.call('GET', '/api/v1/offers/%zz');
      expectWireError(malformed, 400, 'bad_request');
      assert.equal(malformed.headers.get('x-request-id'), malformed.body.error.requestId);
      // Over 1,000 characters the id matches no route: still counted, with the headers.
      for (const path of [`/api/v1/offers/${'a'.repeat(1001)}`, `/api/public/webhooks/${'a'.repeat(1001)}`]) {
        const before = Number((await http.call('GET', '/api/v1/brand')).headers.get('ratelimit-remaining'));
        const overlong = await http.call('GET', path);
        expectWireError(overlong, 404, 'not_found');
        assert.equal(
          Number(overlong.headers.get('ratelimit-remaining')),
          before - 1,
          `${path.slice(0, 20)} is counted`,
        );
        assert.notEqual(overlong.headers.get('ratelimit-limit'), null);
        const anonymous = await http.call('GET', path, { key: null });
        expectWireError(anonymous, 404, 'not_found');
        assert.equal(anonymous.headers.get('ratelimit-remaining'), null, 'no key, no counter');
      }
      // In a query string (as the README says) a bad escape is taken literally.
      const literal = await http.call('GET', '/api/v1/conversions?externalTxnId=%zz');
      assert.equal(literal.status, 200);
      assert.deepEqual(literal.body.data, []);
      const status = await http.call('GET', '/api/v1/offers?status=%zz');
      assert.match(detail(expectWireError(status, 422, 'validation_error'), 'query.status'), /^must be one of/);
    });

    it('counts a keyed request refused for a bad %-escape or a Content-Encoding, with the RateLimit-* headers, like a wrong Content-Type', async () => {
      const { secret: key } = await env.ctx.db.transact((trx) =>
        insertApiKey(trx, env.clock, { brandId: env.brand.id, rateLimitPerMinute: 4 }),
      );
      const refusals: Array<[string, () => Promise<WireResponse>]> = [
        ['bad escape', () => http.call('GET', '/api/v1/offers/%zz', { key })],
        ['bad escape, public API', () => http.call('GET', '/api/public/webhooks/%zz', { key })],
        [
          'Content-Encoding',
          () => http.call('POST', '/api/v1/offers', { key, body: {}, headers: { 'content-encoding': 'gzip' } }),
        ],
        [
          'Content-Type',
          () => http.call('POST', '/api/v1/offers', { key, raw: '{}', headers: { 'content-type': 'text/plain' } }),
        ],
      ];
      const statuses = [400, 400, 415, 415];
      for (const [i, [what, send]] of refusals.entries()) {
        const res = await send();
        assert.equal(res.status, statuses[i], what);
        assert.equal(res.headers.get('ratelimit-limit'), '4', what);
        assert.equal(res.headers.get('ratelimit-remaining'), String(3 - i), `${what} is counted`);
        assert.notEqual(res.headers.get('ratelimit-reset'), null, what);
      }
      // The key's minute is used up: each refusal is now 429, as any other request of the key.
      for (const [what, send] of refusals) {
        const res = await send();
        expectWireError(res, 429, 'rate_limit_exceeded');
        assert.equal(res.headers.get('ratelimit-remaining'), '0', what);
      }
      // An invalid key: the encoding is judged after the key (401), as the Content-Type is; a
      // bad escape is refused before any route is known, whatever the key, as a path that
      // matches no route is 404 whatever the key.
      const coded = await http.call('POST', '/api/v1/offers', {
        key: 'afk_not_a_key',
        body: {},
        headers: { 'content-encoding': 'gzip' },
      });
      expectWireError(coded, 401, 'unauthorized');
      const escaped = await http.call('GET', '/api/v1/offers/%zz', { key: 'afk_not_a_key' });
      expectWireError(escaped, 400, 'bad_request');
      assert.equal(escaped.headers.get('ratelimit-remaining'), null, 'no valid key, no counter');
    });

    it("answers 422 invalid_cursor for another list's cursor", async () => {
      const ulid = '01KAZZZZZZZZZZZZZZZZZZZZZZ';
      for (const [path, foreign] of [
        ['/api/v1/offers', `conv_${ulid}`],
        ['/api/v1/partners', `off_${ulid}`],
        ['/api/v1/conversions', `prt_${ulid}`],
        ['/api/v1/clicks', `conv_${ulid}`],
        ['/api/v1/fraud/blocklist', `clk_${ulid}`],
        ['/api/public/webhooks', `wh_${ulid}`],
        ['/api/public/webhook-deliveries', `sub_${ulid}`],
        ['/api/public/events', `wh_${ulid}`],
      ]) {
        const res = await http.call('GET', `${path}?cursor=${foreign}`);
        expectWireError(res, 422, 'invalid_cursor');
      }
    });

    it("takes any id of the list's kind as a cursor position: a deleted item pages on, another brand's id shows only your items", async () => {
      const ids: string[] = [];
      for (const value of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
        ids.push((await http.call('POST', '/api/v1/fraud/blocklist', { body: { type: 'ip', value } })).body.id);
      }
      const first = await http.call('GET', '/api/v1/fraud/blocklist?limit=1');
      assert.equal(first.body.data[0].id, ids[2]);
      assert.equal((await http.call('DELETE', `/api/v1/fraud/blocklist/${first.body.nextCursor}`)).status, 204);
      const next = await http.call('GET', `/api/v1/fraud/blocklist?limit=1&cursor=${first.body.nextCursor}`);
      assert.equal(next.status, 200, 'the cursor of a deleted item still pages');
      assert.deepEqual(
        next.body.data.map((e: { id: string }) => e.id),
        [ids[1]],
      );
      const other = await env.createBrand('Cursor Other');
      const theirs = await http.call('POST', '/api/v1/offers', {
        key: other.apiKey,
        body: { name: 'Theirs', destinationUrl: 'https://other.example/' },
      });
      await http.call('POST', '/api/v1/offers', { body: { name: 'Mine', destinationUrl: 'https://shop.example/m' } });
      const page = await http.call('GET', `/api/v1/offers?cursor=${theirs.body.id}`);
      assert.equal(page.status, 200);
      assert.ok(page.body.data.length > 0, 'older offers of this brand are listed');
      const mine = (await http.call('GET', '/api/v1/offers?limit=100')).body.data.map((o: { id: string }) => o.id);
      assert.ok(
        page.body.data.every((o: { id: string }) => mine.includes(o.id)),
        "another brand's id pages through this brand's offers only",
      );
      assert.ok(page.body.data.every((o: { id: string }) => o.id < theirs.body.id));
    });

    it('pages with the nextCursor it returned', async () => {
      await http.call('POST', '/api/v1/offers', { body: { name: 'Second', destinationUrl: 'https://shop.example/2' } });
      const first = await http.call('GET', '/api/v1/offers?limit=1');
      assert.equal(first.body.data.length, 1);
      assert.equal(typeof first.body.nextCursor, 'string');
      const second = await http.call('GET', `/api/v1/offers?limit=1&cursor=${first.body.nextCursor}`);
      assert.equal(second.status, 200);
      assert.equal(second.body.data.length, 1);
      assert.notEqual(second.body.data[0].id, first.body.data[0].id);
    });

    it('carries the request id in every error body, the one the client sent when it sent one', async () => {
      expectWireError(await http.call('GET', '/api/v1/nope'), 404, 'not_found');
      expectWireError(await http.call('GET', '/api/v1/brand', { key: null }), 401, 'unauthorized');
      expectWireError(await http.call('GET', '/api/v1/offers/off_missing'), 404, 'not_found');
      const invalidJson = await http.call('POST', '/api/v1/offers', { raw: '{nope' });
      expectWireError(invalidJson, 400, 'invalid_json');
      const given = await http.call('GET', '/api/v1/nope', { headers: { 'x-request-id': 'client-trace-42' } });
      assert.equal(expectWireError(given, 404, 'not_found') && given.body.error.requestId, 'client-trace-42');
    });

    it('refuses a compressed request body with 415 naming its Content-Encoding, and creates nothing', async () => {
      const body = { name: 'Compressed', destinationUrl: 'https://shop.example/gz' };
      for (const coding of ['gzip', 'br', 'deflate', 'GZIP', 'gzip, identity']) {
        const res = await http.call('POST', '/api/v1/offers', { body, headers: { 'content-encoding': coding } });
        const error = expectWireError(res, 415, 'unsupported_media_type');
        assert.match(error.message, /Content-Encoding .*is not supported: send the request body uncompressed/);
      }
      const named = await http.call('PATCH', `/api/v1/offers/${offerId}`, {
        body: {},
        headers: { 'content-encoding': 'br' },
      });
      assert.match(expectWireError(named, 415, 'unsupported_media_type').message, /^Content-Encoding "br" is not/);
      const offers = await http.call('GET', '/api/v1/offers?limit=100');
      assert.ok(
        offers.body.data.every((o: { name: string }) => o.name !== 'Compressed'),
        'no refused body was stored',
      );
      const identity = await http.call('POST', '/api/v1/offers', {
        body,
        headers: { 'content-encoding': 'identity' },
      });
      assert.equal(identity.status, 201, 'identity is no coding');
    });

    it('challenges with WWW-Authenticate: Bearer on every 401 of the brand, partner and public webhook APIs', async () => {
      for (const [path, key] of [
        ['/api/v1/brand', null],
        ['/api/v1/brand', 'afk_not_a_key'],
        ['/api/v1/partner/offers', null],
        ['/api/v1/partner/offers', 'afp_not_a_key'],
        ['/api/public/webhooks', null],
        ['/api/public/webhooks', 'afk_not_a_key'],
      ] as const) {
        const res = await http.call('GET', path, { key });
        expectWireError(res, 401, 'unauthorized');
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="affitrack"', `${path} with ${key}`);
      }
      const ok = await http.call('GET', '/api/v1/brand');
      assert.equal(ok.headers.get('www-authenticate'), null, 'only a 401 challenges');
    });

    it('accepts currency codes in any case and stores them upper case', async () => {
      const offer = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Euro', destinationUrl: 'https://shop.example/eu', currency: 'eur' },
      });
      assert.equal(offer.status, 201);
      assert.equal(offer.body.currency, 'EUR');
      const patched = await http.call('PATCH', `/api/v1/offers/${offer.body.id}`, { body: { currency: 'gBp' } });
      assert.equal(patched.body.currency, 'GBP');
      const conversion = await http.call('POST', '/api/v1/conversions', {
        body: { offerId: offer.body.id, partnerId, currency: 'chf', revenueCents: 100, payoutCents: 50 },
      });
      assert.equal(conversion.body.currency, 'CHF');
      const brand = await http.call('PATCH', '/api/v1/brand', { body: { currency: 'jpy' } });
      assert.equal(brand.body.currency, 'JPY');
      assert.equal((await http.call('GET', '/api/v1/brand')).body.currency, 'JPY');
    });

    it('accepts a time zone in any case and stores and returns its IANA spelling', async () => {
      // Created with one (the CLI's and the first start's way), then changed with PATCH /brand.
      const { apiKey: key } = await env.createBrand('Zones', { timezone: 'america/new_york' });
      assert.equal((await http.call('GET', '/api/v1/brand', { key })).body.timezone, 'America/New_York');
      for (const [typed, stored] of [
        ['europe/berlin', 'Europe/Berlin'],
        ['utc', 'UTC'],
        ['ASIA/TOKYO', 'Asia/Tokyo'],
        ['etc/gmt+5', 'Etc/GMT+5'],
        ['Pacific/Kiritimati', 'Pacific/Kiritimati'],
      ]) {
        const patched = await http.call('PATCH', '/api/v1/brand', { key, body: { timezone: typed } });
        assert.equal(patched.body.timezone, stored, typed);
        assert.equal((await http.call('GET', '/api/v1/brand', { key })).body.timezone, stored, typed);
      }
    });

    it('stores a renamed zone by its current IANA name, and a link or an old name as that zone', async () => {
      const { apiKey: key } = await env.createBrand('Kolkata', { timezone: 'Asia/Kolkata' });
      assert.equal((await http.call('GET', '/api/v1/brand', { key })).body.timezone, 'Asia/Kolkata');
      for (const [typed, stored] of [
        ['Europe/Kyiv', 'Europe/Kyiv'],
        ['Asia/Ho_Chi_Minh', 'Asia/Ho_Chi_Minh'],
        ['asia/kathmandu', 'Asia/Kathmandu'],
        ['America/Nuuk', 'America/Nuuk'],
        ['America/Argentina/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
        ['Asia/Calcutta', 'Asia/Kolkata'],
        ['Europe/Kiev', 'Europe/Kyiv'],
        ['US/Eastern', 'America/New_York'],
        ['Europe/Bratislava', 'Europe/Bratislava'],
      ]) {
        const patched = await http.call('PATCH', '/api/v1/brand', { key, body: { timezone: typed } });
        assert.equal(patched.body.timezone, stored, typed);
        assert.equal((await http.call('GET', '/api/v1/brand', { key })).body.timezone, stored, typed);
      }
    });

    it('gives brands saved under a renamed zone’s old name its current IANA name (migration 0039)', async () => {
      const saved: Array<[string, string]> = [
        ['Asia/Calcutta', 'Asia/Kolkata'],
        ['Europe/Kiev', 'Europe/Kyiv'],
        ['asia/saigon', 'Asia/Ho_Chi_Minh'],
        ['Europe/Berlin', 'Europe/Berlin'],
      ];
      const brands = [];
      for (const [timezone] of saved) {
        const { id, apiKey: key } = await env.createBrand(`Old ${timezone}`);
        // As 0036 left them: Intl's spelling, the old name of a renamed zone.
        await env.ctx.db.transact((trx) => trx.updateTable('brands').set({ timezone }).where('id', '=', id).execute());
        brands.push(key);
      }
      await ianaTimeZoneNames.up(env.ctx.db.admin as unknown as Kysely<unknown>);
      const stored = [];
      for (const key of brands) stored.push((await http.call('GET', '/api/v1/brand', { key })).body.timezone);
      assert.deepEqual(
        stored,
        saved.map(([, now]) => now),
      );
    });

    it('gives brands saved with a time zone in another case its IANA spelling (migration 0036)', async () => {
      const { id, apiKey: key } = await env.createBrand('Old Zone');
      // As stored before 0036: the zone as it was typed.
      await env.ctx.db.transact((trx) =>
        trx.updateTable('brands').set({ timezone: 'europe/berlin' }).where('id', '=', id).execute(),
      );
      await canonicalTimeZones.up(env.ctx.db.admin as unknown as Kysely<unknown>);
      assert.equal((await http.call('GET', '/api/v1/brand', { key })).body.timezone, 'Europe/Berlin');
    });
  });
}
