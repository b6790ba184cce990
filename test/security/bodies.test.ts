/**
 * Input a hostile or careless client can send within the size limit: huge lists and
 * objects (bounded before the schemas validate them item by item), and bytes that are not
 * UTF-8 in a body or query string (refused instead of stored as U+FFFD).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jsonShapeProblem, MAX_DEPTH, MAX_ENTRIES } from '../../src/http/inputText.js';
import { MAX_DETAILS } from '../../src/http/validationErrors.js';
import { parseForm } from '../../src/web/formBodies.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const nested = (depth: number, inner = '') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('bounds read off a body before it is parsed', () => {
  it('reads the nesting and the entries of JSON text off its bytes, not counting text in strings', () => {
    const shape = (value: unknown) => jsonShapeProblem(new TextEncoder().encode(JSON.stringify(value)));
    const deep = `must not nest lists and objects more than ${MAX_DEPTH} levels deep`;
    const text = (s: string) => jsonShapeProblem(new TextEncoder().encode(s));
    assert.equal(text(nested(MAX_DEPTH)), null);
    assert.deepEqual(text(nested(MAX_DEPTH + 1)), { path: '', message: deep });
    assert.deepEqual(text(`{"a":{"b":${nested(MAX_DEPTH - 1)}}}`), { path: '', message: deep });
    const list = Array.from({ length: MAX_ENTRIES }, () => 'x,]');
    assert.equal(shape({ events: list }), null);
    assert.deepEqual(shape({ url: 'u', events: [...list, 'x'] }), {
      path: 'events',
      message: `must list at most ${MAX_ENTRIES} items`,
    });
    const keys = Object.fromEntries(Array.from({ length: MAX_ENTRIES + 1 }, (_, i) => [`k${i}`, '{']));
    assert.deepEqual(shape({ 'a."b': [0, { c: keys }] }), {
      path: 'a."b.1.c',
      message: `must have at most ${MAX_ENTRIES} keys`,
    });
    // Brackets, commas and colons in strings, escaped quotes included, are text.
    assert.equal(shape({ name: `"${nested(100)}\\"[[${','.repeat(5000)}` }), null);
  });

  it(`reads a form no further than one field past ${MAX_ENTRIES}`, () => {
    const fields = Array.from({ length: 100_000 }, (_, i) => `k${i}=v`).join('&');
    assert.equal(Object.keys(parseForm(fields)).length, MAX_ENTRIES + 1);
    assert.equal((parseForm('a=1&'.repeat(100_000)).a as string[]).length, MAX_ENTRIES + 1);
    assert.deepEqual({ ...parseForm('a=b+c&z=caf%C3%A9&n') }, { a: 'b c', z: 'café', n: '' });
  });
});

const HOOKS = '/api/public/webhooks';

for (const dialect of testedDialects()) {
  describe(`request bodies at the edge of the limits (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    const raw = (url: string, payload: string | Buffer, contentType = 'application/json') =>
      env.app.inject({
        method: 'POST',
        url,
        payload,
        headers: { authorization: `Bearer ${env.brand.apiKey}`, 'content-type': contentType },
      });
    const stored = async () => (await env.request('GET', `${HOOKS}?limit=100`)).body.data.length as number;

    it(`refuses a list of more than ${MAX_ENTRIES} items with one problem, storing nothing`, async () => {
      const before = await stored();
      const events = Array.from({ length: 30_000 }, () => 'x');
      const res = await env.request('POST', HOOKS, { body: { url: 'https://hooks.example/', events } });
      const error = expectError(res, 422, 'validation_error');
      assert.deepEqual(error.details, [{ path: 'events', message: `must list at most ${MAX_ENTRIES} items` }]);
      assert.equal(await stored(), before);
    });

    it(`lists at most ${MAX_DETAILS} problems`, async () => {
      const events = Array.from({ length: MAX_ENTRIES }, (_, i) => `not.an.event.${i}`);
      const res = await env.request('POST', HOOKS, { body: { url: 'https://hooks.example/', events } });
      const error = expectError(res, 422, 'validation_error');
      assert.equal(error.details?.length, MAX_DETAILS);
      assert.ok(
        error.details?.every((d) => d.path.startsWith('events')),
        JSON.stringify(error.details?.slice(0, 3)),
      );
    });

    it(`refuses an object of more than ${MAX_ENTRIES} keys`, async () => {
      const body: Record<string, string> = { name: 'Offer', destinationUrl: 'https://shop.example/' };
      for (let i = 0; i < 60_000; i++) body[`k${i}`] = 'x';
      const error = expectError(await env.request('POST', '/api/v1/offers', { body }), 422, 'validation_error');
      assert.deepEqual(error.details, [{ path: 'body', message: `must have at most ${MAX_ENTRIES} keys` }]);
    });

    it(`refuses JSON nested more than ${MAX_DEPTH} levels deep as one problem, before parsing it`, async () => {
      const before = (await env.request('GET', '/api/v1/offers?limit=100')).body.data.length;
      for (const payload of [nested(500_000), `{"name":"x","metadata":{"a":${nested(MAX_DEPTH)}}}`]) {
        const res = await raw('/api/v1/offers', payload);
        assert.equal(res.statusCode, 422);
        assert.deepEqual(res.json().error.details, [
          { path: 'body', message: `must not nest lists and objects more than ${MAX_DEPTH} levels deep` },
        ]);
      }
      // No key needed to send one: the public application form is refused alike.
      const apply = await env.app.inject({
        method: 'POST',
        url: '/api/public/partners/apply',
        payload: nested(200_000),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(apply.statusCode, 422);
      assert.equal(apply.json().error.details[0].path, 'body');
      // Brackets in text are text.
      const named = await env.request('POST', '/api/v1/offers', {
        body: { name: nested(100), destinationUrl: 'https://shop.example/' },
      });
      assert.equal(named.status, 201, named.body?.error?.message);
      assert.equal((await env.request('GET', '/api/v1/offers?limit=100')).body.data.length, before + 1);
    });

    it('answers 400 for bytes that are not UTF-8 instead of storing U+FFFD in their place', async () => {
      const before = (await env.request('GET', '/api/v1/offers?limit=100')).body.data.length;
      for (const bad of [Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xe9])]) {
        const payload = Buffer.concat([
          Buffer.from('{"name":"caf'),
          bad,
          Buffer.from('","destinationUrl":"https://shop.example/"}'),
        ]);
        const res = await raw('/api/v1/offers', payload);
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error.code, 'invalid_json');
      }
      assert.equal((await env.request('GET', '/api/v1/offers?limit=100')).body.data.length, before);
    });

    it('answers 422 for %-escapes in a query string that are not UTF-8, and takes valid ones and a lone %', async () => {
      for (const escaped of ['%ED%A0%80', '%C0%AF', 'caf%E9']) {
        const res = await env.request('GET', `/api/v1/conversions?externalTxnId=${escaped}`);
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details,
          [{ path: 'query.externalTxnId', message: 'must be percent-encoded UTF-8' }],
          escaped,
        );
      }
      for (const fine of ['caf%C3%A9', '100%', '%F0%9F%8E%89']) {
        const res = await env.request('GET', `/api/v1/conversions?externalTxnId=${fine}`);
        assert.equal(res.status, 200, `${fine}: ${JSON.stringify(res.body)}`);
      }
    });

    it('answers 415 for non-ASCII declared in another charset, and takes UTF-8 however it is spelt', async () => {
      const latin1 = Buffer.from('{"name":"café","destinationUrl":"https://shop.example/"}', 'latin1');
      const refused = await raw('/api/v1/offers', latin1, 'application/json; charset=latin1');
      assert.equal(refused.statusCode, 415, refused.body);
      assert.equal(refused.json().error.code, 'unsupported_media_type');
      const ascii = await raw(
        '/api/v1/offers',
        '{"name":"cafe","destinationUrl":"https://shop.example/"}',
        'application/json; charset=us-ascii',
      );
      assert.equal(ascii.statusCode, 201, `ASCII reads the same in any charset: ${ascii.body}`);
      for (const contentType of [
        'application/json; charset=utf-8',
        'application/json;charset="UTF-8"',
        'application/json; charset=utf8',
      ]) {
        const res = await raw(
          '/api/v1/offers',
          '{"name":"café","destinationUrl":"https://shop.example/"}',
          contentType,
        );
        assert.equal(res.statusCode, 201, `${contentType}: ${res.body}`);
        assert.equal(res.json().name, 'café');
      }
    });
  });
}
