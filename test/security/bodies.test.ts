/**
 * Input a hostile or careless client can send within the size limit: huge lists and
 * objects (bounded before the schemas validate them item by item), and bytes that are not
 * UTF-8 in a body or query string (refused instead of stored as U+FFFD).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_ENTRIES } from '../../src/http/inputText.js';
import { MAX_DETAILS } from '../../src/http/validationErrors.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

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
