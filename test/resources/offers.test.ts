import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const BASE = { name: 'Spring sale', destinationUrl: 'https://shop.example/landing?c={click_id}' };

for (const dialect of testedDialects()) {
  describe(`offers (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    const create = async (body: Record<string, unknown> = {}, key?: string) => {
      const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, ...body }, key });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };

    describe('POST /api/v1/offers', () => {
      it('creates an active offer with the documented defaults', async () => {
        const offer = await create();
        assert.match(offer.id, /^off_[0-9A-Z]{26}$/);
        assert.equal(offer.name, BASE.name);
        assert.equal(offer.destinationUrl, BASE.destinationUrl);
        assert.equal(offer.status, 'active');
        assert.equal(offer.currency, 'USD');
        assert.equal(offer.revenueCents, 0);
        assert.equal(offer.payoutCents, 0);
        assert.equal(offer.conversionStatus, 'pending');
        assert.equal(offer.holdSeconds, null);
        assert.deepEqual(offer.caps, { daily: null, weekly: null, monthly: null, global: null });
        assert.equal(offer.fallbackUrl, null);
        assert.equal(offer.createdAt, new Date(env.clock.now()).toISOString());
        assert.match(offer.updatedAt, ISO_MS);
      });

      it("takes the default currency from the caller's brand", async () => {
        const other = await env.createBrand('Euro Shop');
        const patched = await env.request('PATCH', '/api/v1/brand', { key: other.apiKey, body: { currency: 'EUR' } });
        assert.equal(patched.status, 200);
        assert.equal((await create({}, other.apiKey)).currency, 'EUR');
      });

      it('stores every field given', async () => {
        const offer = await create({
          status: 'paused',
          currency: 'GBP',
          revenueCents: 5000,
          payoutCents: 1200,
          conversionStatus: 'approved',
          holdSeconds: 3600,
          caps: { daily: 10, global: 500 },
          fallbackUrl: 'https://shop.example/sold-out',
        });
        assert.equal(offer.status, 'paused');
        assert.equal(offer.currency, 'GBP');
        assert.equal(offer.revenueCents, 5000);
        assert.equal(offer.payoutCents, 1200);
        assert.equal(offer.conversionStatus, 'approved');
        assert.equal(offer.holdSeconds, 3600);
        assert.deepEqual(offer.caps, { daily: 10, weekly: null, monthly: null, global: 500 });
        assert.equal(offer.fallbackUrl, 'https://shop.example/sold-out');
      });

      it('answers 422 for a currency that is not ISO 4217', async () => {
        const error = expectError(
          await env.request('POST', '/api/v1/offers', { body: { ...BASE, currency: 'XYZ' } }),
          422,
          'validation_error',
        );
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['currency'],
        );
      });

      it('answers 422 for a destinationUrl that is not http(s)', async () => {
        for (const destinationUrl of ['javascript:alert(1)', 'ftp://files.example/x', '/relative/path']) {
          const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, destinationUrl } });
          const error = expectError(res, 422, 'validation_error');
          assert.deepEqual(
            error.details?.map((d) => d.path),
            ['destinationUrl'],
            destinationUrl,
          );
        }
      });

      it('answers 422 for a URL with control characters or a macro in its host, naming the field', async () => {
        const cases: Array<[Record<string, string>, string, RegExp]> = [
          [{ destinationUrl: 'https://shop.example/a\r\nSet-Cookie: x=1' }, 'destinationUrl', /control characters/],
          [{ destinationUrl: 'https://shop.example/\u0001' }, 'destinationUrl', /control characters/],
          [{ destinationUrl: 'https://{sub1}/landing' }, 'destinationUrl', /path and query only/],
          [{ destinationUrl: 'https://shop.example{sub1}/' }, 'destinationUrl', /path and query only/],
          [{ fallbackUrl: 'https://{sub2}.example/' }, 'fallbackUrl', /path and query only/],
        ];
        for (const [fields, path, message] of cases) {
          const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, ...fields } });
          const error = expectError(res, 422, 'validation_error');
          assert.deepEqual(
            error.details?.map((d) => d.path),
            [path],
            JSON.stringify(fields),
          );
          assert.match(error.details?.[0]?.message ?? '', message);
        }
        const patched = await env.request('PATCH', `/api/v1/offers/${(await create()).id}`, {
          body: { fallbackUrl: 'https://fallback.example/\n' },
        });
        assert.deepEqual(
          expectError(patched, 422, 'validation_error').details?.map((d) => d.path),
          ['fallbackUrl'],
        );
      });

      it('lists a macro in the host with the other problems of the request, in one 422', async () => {
        const res = await env.request('POST', '/api/v1/offers', {
          body: { name: 'x', destinationUrl: 'https://{sub1}.evil.example/x', revenueCents: -1, caps: { daily: 0 } },
        });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(error.details?.map((d) => d.path).sort(), ['caps.daily', 'destinationUrl', 'revenueCents']);
        const destination = error.details?.find((d) => d.path === 'destinationUrl');
        assert.match(
          destination?.message ?? '',
          /^must be an absolute http\(s\) URL .*macros in the path and query only$/,
        );
        const patched = await env.request('PATCH', `/api/v1/offers/${(await create()).id}`, {
          body: { fallbackUrl: 'https://{sub2}.example/', payoutCents: -1 },
        });
        assert.deepEqual(
          expectError(patched, 422, 'validation_error')
            .details?.map((d) => d.path)
            .sort(),
          ['fallbackUrl', 'payoutCents'],
        );
      });

      it('accepts an internationalised URL and macros in the path and query', async () => {
        const destinationUrl = 'https://shop.example/日本/{sub1}?c={click_id}';
        const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, destinationUrl } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.destinationUrl, destinationUrl);
      });

      it('answers 422 for a negative amount', async () => {
        const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, revenueCents: -1 } });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['revenueCents'],
        );
      });

      it('answers 422 for an integer sent as a string, without coercing it', async () => {
        const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, payoutCents: '1000' } });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['payoutCents'],
        );
      });

      it('answers 422 for an unknown field', async () => {
        const res = await env.request('POST', '/api/v1/offers', { body: { ...BASE, colour: 'red' } });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['colour'],
        );
      });

      it('creates nothing when validation fails', async () => {
        const other = await env.createBrand('Empty Co');
        await env.request('POST', '/api/v1/offers', { key: other.apiKey, body: { ...BASE, currency: 'XYZ' } });
        const list = await env.request('GET', '/api/v1/offers', { key: other.apiKey });
        assert.deepEqual(list.body.data, []);
      });
    });

    describe('GET /api/v1/offers/:id', () => {
      it('returns the offer as it was created', async () => {
        const offer = await create({ name: 'Readable', revenueCents: 700 });
        const res = await env.request('GET', `/api/v1/offers/${offer.id}`);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, offer);
      });

      it('answers 404 for an unknown id', async () => {
        expectError(await env.request('GET', '/api/v1/offers/off_00000000000000000000000000'), 404, 'not_found');
      });

      it("answers 404 for another brand's offer", async () => {
        const other = await env.createBrand('Rival');
        const theirs = await create({ name: 'Theirs' }, other.apiKey);
        expectError(await env.request('GET', `/api/v1/offers/${theirs.id}`), 404, 'not_found');
      });
    });

    describe('PATCH /api/v1/offers/:id', () => {
      it('changes only the fields given and moves updatedAt', async () => {
        const offer = await create({ revenueCents: 100, payoutCents: 50 });
        env.clock.advance(5_000);
        const res = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { name: 'Renamed', status: 'paused' },
        });
        assert.equal(res.status, 200);
        assert.equal(res.body.name, 'Renamed');
        assert.equal(res.body.status, 'paused');
        assert.equal(res.body.revenueCents, 100);
        assert.equal(res.body.payoutCents, 50);
        assert.equal(res.body.createdAt, offer.createdAt);
        assert.equal(res.body.updatedAt, new Date(env.clock.now()).toISOString());
        assert.deepEqual((await env.request('GET', `/api/v1/offers/${offer.id}`)).body, res.body);
      });

      it('merges caps key by key and clears a cap set to null', async () => {
        const offer = await create({ caps: { daily: 10, weekly: 50 } });
        const merged = await env.request('PATCH', `/api/v1/offers/${offer.id}`, { body: { caps: { monthly: 200 } } });
        assert.deepEqual(merged.body.caps, { daily: 10, weekly: 50, monthly: 200, global: null });
        const cleared = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { caps: { daily: null, global: 1000 } },
        });
        assert.deepEqual(cleared.body.caps, { daily: null, weekly: 50, monthly: 200, global: 1000 });
        const stored = await env.request('GET', `/api/v1/offers/${offer.id}`);
        assert.deepEqual(stored.body.caps, cleared.body.caps);
      });

      it('clears holdSeconds and fallbackUrl with null', async () => {
        const offer = await create({ holdSeconds: 60, fallbackUrl: 'https://shop.example/full' });
        const res = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { holdSeconds: null, fallbackUrl: null },
        });
        assert.equal(res.body.holdSeconds, null);
        assert.equal(res.body.fallbackUrl, null);
      });

      it('answers 422 for invalid changes and leaves the offer as it was', async () => {
        const offer = await create();
        const res = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { destinationUrl: 'javascript:alert(1)', currency: 'XYZ' },
        });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(error.details?.map((d) => d.path).sort(), ['currency', 'destinationUrl']);
        assert.deepEqual((await env.request('GET', `/api/v1/offers/${offer.id}`)).body, offer);
      });

      it('refuses a new currency without the default amounts, naming both, and leaves the offer as it was', async () => {
        const offer = await create({ currency: 'USD', revenueCents: 5000, payoutCents: 500 });
        const res = await env.request('PATCH', `/api/v1/offers/${offer.id}`, { body: { currency: 'kwd' } });
        const error = expectError(res, 422, 'validation_error');
        const why =
          "is required when currency changes (USD to KWD): the offer's amount is in USD and is never relabelled";
        assert.deepEqual(error.details, [
          { path: 'revenueCents', message: why },
          { path: 'payoutCents', message: why },
        ]);
        const half = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { currency: 'KWD', payoutCents: 150 },
        });
        assert.deepEqual(
          expectError(half, 422, 'validation_error').details?.map((d) => d.path),
          ['revenueCents'],
        );
        assert.deepEqual((await env.request('GET', `/api/v1/offers/${offer.id}`)).body, offer);
      });

      it('changes the currency with both default amounts given in the same request', async () => {
        const offer = await create({ currency: 'USD', revenueCents: 5000, payoutCents: 500 });
        const res = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { currency: 'KWD', revenueCents: 15_400, payoutCents: 1_540 },
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual([res.body.currency, res.body.revenueCents, res.body.payoutCents], ['KWD', 15_400, 1_540]);
      });

      it('needs no amount for the same currency in any case, nor for an amount of 0', async () => {
        const offer = await create({ currency: 'EUR', revenueCents: 900, payoutCents: 0 });
        const same = await env.request('PATCH', `/api/v1/offers/${offer.id}`, { body: { currency: 'eur' } });
        assert.equal(same.status, 200, JSON.stringify(same.body));
        const zero = await env.request('PATCH', `/api/v1/offers/${offer.id}`, {
          body: { currency: 'GBP', revenueCents: 800 },
        });
        assert.deepEqual([zero.status, zero.body.currency, zero.body.payoutCents], [200, 'GBP', 0]);
        const none = await create({ currency: 'USD' });
        const bare = await env.request('PATCH', `/api/v1/offers/${none.id}`, { body: { currency: 'JPY' } });
        assert.deepEqual([bare.status, bare.body.currency], [200, 'JPY']);
      });

      it("answers 404 for another brand's offer and does not change it", async () => {
        const other = await env.createBrand('Rival Two');
        const theirs = await create({ name: 'Untouchable' }, other.apiKey);
        const res = await env.request('PATCH', `/api/v1/offers/${theirs.id}`, { body: { name: 'Hijacked' } });
        expectError(res, 404, 'not_found');
        const stored = await env.request('GET', `/api/v1/offers/${theirs.id}`, { key: other.apiKey });
        assert.equal(stored.body.name, 'Untouchable');
      });
    });

    describe('GET /api/v1/offers', () => {
      it('pages through offers newest first with a cursor', async () => {
        const other = await env.createBrand('Pager');
        const ids: string[] = [];
        for (let i = 1; i <= 5; i++) {
          ids.push((await create({ name: `Offer ${i}` }, other.apiKey)).id);
          env.clock.advance(1);
        }
        const newestFirst = [...ids].reverse();
        const seen: string[] = [];
        let cursor: string | null = null;
        const pages: number[] = [];
        do {
          const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
          const res = await env.request('GET', `/api/v1/offers?limit=2${query}`, { key: other.apiKey });
          assert.equal(res.status, 200);
          pages.push(res.body.data.length);
          seen.push(...res.body.data.map((o: { id: string }) => o.id));
          cursor = res.body.nextCursor;
        } while (cursor !== null && pages.length < 10);
        assert.deepEqual(pages, [2, 2, 1]);
        assert.deepEqual(seen, newestFirst);
      });

      it('ends with a null nextCursor when the last page is exactly full', async () => {
        const other = await env.createBrand('Even Pager');
        for (let i = 0; i < 2; i++) await create({ name: `Even ${i}` }, other.apiKey);
        const res = await env.request('GET', '/api/v1/offers?limit=2', { key: other.apiKey });
        assert.equal(res.body.data.length, 2);
        assert.equal(res.body.nextCursor, null);
      });

      it('filters by status', async () => {
        const other = await env.createBrand('Filterer');
        const active = await create({ name: 'On' }, other.apiKey);
        const paused = await create({ name: 'Off', status: 'paused' }, other.apiKey);
        const archived = await create({ name: 'Gone', status: 'archived' }, other.apiKey);
        const ids = async (status: string) =>
          (await env.request('GET', `/api/v1/offers?status=${status}`, { key: other.apiKey })).body.data.map(
            (o: { id: string }) => o.id,
          );
        assert.deepEqual(await ids('active'), [active.id]);
        assert.deepEqual(await ids('paused'), [paused.id]);
        assert.deepEqual(await ids('archived'), [archived.id]);
      });

      it('answers 422 for an unknown status or an out-of-range limit', async () => {
        expectError(await env.request('GET', '/api/v1/offers?status=deleted'), 422, 'validation_error');
        expectError(await env.request('GET', '/api/v1/offers?limit=0'), 422, 'validation_error');
        expectError(await env.request('GET', '/api/v1/offers?limit=101'), 422, 'validation_error');
      });

      it("lists only the caller brand's offers", async () => {
        const mine = await env.createBrand('Mine');
        const theirs = await env.createBrand('Theirs');
        const own = await create({ name: 'Own' }, mine.apiKey);
        await create({ name: 'Foreign' }, theirs.apiKey);
        const res = await env.request('GET', '/api/v1/offers', { key: mine.apiKey });
        assert.deepEqual(
          res.body.data.map((o: { id: string }) => o.id),
          [own.id],
        );
      });
    });
  });
}
