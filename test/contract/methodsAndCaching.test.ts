/**
 * Two rules of answers the router gives before any route runs, over real HTTP on both
 * databases (keys are looked up and counted in each): a known path asked with a method it
 * does not take is 405 with `Allow` (an unknown path stays 404), and every answer under /api,
 * those refusals included, says `Cache-Control: no-store`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { insertApiKey } from '../../src/modules/apiKeys/service.js';
import { expectError, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv, type HttpResponse } from '../payouts/http.js';
import { servedRoutes } from '../security/support.js';

const BODY_LIMIT = 2048;
/** The sweep over every route makes hundreds of requests with one key. */
const RATE_LIMIT = 100_000;

/** Sends raw bytes on a fresh connection; resolves to the status line and the lower-cased head. */
function exchange(base: string, bytes: string): Promise<{ status: number; head: string }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
      resolve({ status: Number(/^http\/1\.1 (\d{3}) /.exec(head)?.[1]), head });
    });
    socket.write(bytes);
  });
}

function assertNoStore(response: HttpResponse, what: string): void {
  assert.equal(response.headers.get('cache-control'), 'no-store', `${what} → ${response.status}`);
}

function assert405(response: HttpResponse, allow: string, what: string): void {
  const error = expectError(response, 405, 'method_not_allowed');
  assert.equal(response.headers.get('allow'), allow, what);
  assert.equal(error.message.includes(allow), true, error.message);
  assertNoStore(response, what);
}

for (const dialect of testedDialects()) {
  describe(`Router answers under /api (${dialect})`, () => {
    let env: HttpEnv;
    let offerId: string;
    before(async () => {
      env = await createHttpEnv(dialect, {
        env: { BODY_LIMIT_BYTES: `${BODY_LIMIT}`, RATE_LIMIT_PER_MINUTE: `${RATE_LIMIT}` },
      });
      offerId = (
        await env.http('POST', '/api/v1/offers', {
          body: { name: 'Methods', destinationUrl: 'https://shop.example/', payoutCents: 100 },
        })
      ).body.id;
    });
    after(() => env.close());

    describe('a known path with a method it does not take', () => {
      it('is 405 with Allow listing the methods of the path, in the error shape', async () => {
        assert405(await env.http('DELETE', '/api/v1/brand'), 'GET, HEAD, OPTIONS, PATCH', 'DELETE /brand');
        assert405(await env.http('PUT', '/api/v1/offers', { body: {} }), 'GET, HEAD, OPTIONS, POST', 'PUT /offers');
        assert405(await env.http('POST', `/api/v1/offers/${offerId}`), 'GET, HEAD, OPTIONS, PATCH', 'POST /offers/:id');
        assert405(await env.http('DELETE', '/api/v1/brand/'), 'GET, HEAD, OPTIONS, PATCH', 'a trailing slash');
        assert405(
          await env.http('PUT', '/api/public/webhooks'),
          'GET, HEAD, OPTIONS, POST',
          'PUT /api/public/webhooks',
        );
        assert405(await env.http('GET', '/api/v1/conversions/conv_nope/approve'), 'OPTIONS, POST', 'GET on an action');
      });

      it('is 405 whatever the key, and counts a valid one like any other request', async () => {
        const keyed = await env.http('DELETE', '/api/v1/brand');
        assert.equal(keyed.headers.get('ratelimit-limit'), `${RATE_LIMIT}`);
        for (const key of [null, 'afk_not_a_key']) {
          const answer = await env.http('DELETE', '/api/v1/brand', { key });
          assert405(answer, 'GET, HEAD, OPTIONS, PATCH', `key ${key}`);
          assert.equal(answer.headers.get('ratelimit-limit'), null, 'no counter without a valid key');
        }
      });

      it('lists, for every API route, exactly the methods its path is served with', async () => {
        const byPath = new Map<string, Set<string>>();
        for (const { method, path } of servedRoutes(env)) {
          if (!path.startsWith('/api/')) continue;
          const methods = byPath.get(path) ?? new Set<string>();
          methods.add(method);
          if (method === 'GET') methods.add('HEAD');
          byPath.set(path, methods.add('OPTIONS'));
        }
        assert.ok(byPath.size > 40, `${byPath.size} API paths`);
        for (const [path, methods] of byPath) {
          // A parameter value no static sibling route is named.
          const url = path.replace(/\{\w+\}/g, 'zz_probe');
          const allow = [...methods].sort().join(', ');
          const unserved = ['PUT', 'DELETE', 'PATCH', 'POST'].find((method) => !methods.has(method));
          if (unserved) assert405(await env.http(unserved, url), allow, `${unserved} ${path}`);
          const options = await env.http('OPTIONS', url);
          assert.equal(options.status, 204, `OPTIONS ${path}`);
          assert.equal(options.headers.get('allow'), allow, `OPTIONS ${path}`);
          assertNoStore(options, `OPTIONS ${path}`);
        }
      });

      it('keeps HEAD on GET routes, answers HEAD elsewhere without a body, and OPTIONS with Allow', async () => {
        const head = await env.http('HEAD', '/api/v1/offers');
        assert.equal(head.status, 200);
        const headOnAction = await env.http('HEAD', `/api/v1/conversions/conv_nope/approve`);
        assert.equal(headOnAction.status, 405);
        assert.equal(headOnAction.headers.get('allow'), 'OPTIONS, POST');
        assert.equal(headOnAction.text, '', 'no body to a HEAD');
        const options = await env.http('OPTIONS', '/api/v1/offers', { key: null });
        assert.equal(options.status, 204);
        assert.equal(options.headers.get('allow'), 'GET, HEAD, OPTIONS, POST');
        assert.equal(options.text, '');
      });

      it('leaves unknown paths 404, with no Allow, and documents 405', async () => {
        for (const [method, path] of [
          ['GET', '/api/v1/no-such-route'],
          ['DELETE', '/api/v1/brands'],
          ['OPTIONS', '/api/v1/no-such-route'],
          ['PUT', '/api/v1/offers/a/b/c'],
          ['GET', '/api/public/no-such-route'],
        ] as const) {
          const answer = await env.http(method, path);
          expectError(answer, 404, 'not_found');
          assert.equal(answer.headers.get('allow'), null, `${method} ${path}`);
          assertNoStore(answer, `${method} ${path}`);
        }
        const doc = (await env.http('GET', '/api/v1/openapi.json', { key: null })).body;
        assert.match(doc.info.description, /405 `method_not_allowed` with an `Allow` header/);
        assert.match(readFileSync('README.md', 'utf8'), /\| 405 \| `method_not_allowed` \|/);
      });
    });

    describe('Cache-Control on refusals made before the route runs', () => {
      it('says no-store on 401, 404, 405, 413, 415, 400 and 429', async () => {
        const refusals: Array<[string, HttpResponse, number]> = [
          ['no key', await env.http('GET', '/api/v1/offers', { key: null }), 401],
          ['a bad key', await env.http('GET', '/api/v1/offers', { key: 'afk_not_a_key' }), 401],
          ['an unknown route', await env.http('GET', '/api/v1/no-such-route'), 404],
          ['a wrong method', await env.http('PUT', '/api/v1/offers'), 405],
          [
            'a body too large',
            await env.http('POST', '/api/v1/offers', { body: { name: 'x'.repeat(BODY_LIMIT * 2) } }),
            413,
          ],
          [
            'not JSON',
            await env.http('POST', '/api/v1/offers', { headers: { 'content-type': 'text/plain' }, body: 'x' }),
            415,
          ],
          [
            'unparsable JSON',
            await fetch(`${env.base}/api/v1/offers`, {
              method: 'POST',
              headers: { authorization: `Bearer ${env.brand.apiKey}`, 'content-type': 'application/json' },
              body: '{',
            }).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text(), body: null })),
            400,
          ],
          ['a badly %-encoded path', await env.http('GET', '/api/v1/offers/%zz'), 400],
          ['an over-long path segment', await env.http('GET', `/api/v1/offers/${'a'.repeat(1100)}`), 404],
          ['/api itself', await env.http('GET', '/api', { key: null }), 404],
          ['/api with a query string', await env.http('GET', '/api?x=1', { key: null }), 404],
        ];
        const { secret } = await env.ctx.db.transact((trx) =>
          insertApiKey(trx, env.clock, { brandId: env.brand.id, name: 'one a minute', rateLimitPerMinute: 1 }),
        );
        assert.equal((await env.http('GET', '/api/v1/offers', { key: secret })).status, 200);
        refusals.push(['over the rate limit', await env.http('GET', '/api/v1/offers', { key: secret }), 429]);
        refusals.push(['over the limit, wrong method', await env.http('PUT', '/api/v1/offers', { key: secret }), 429]);
        for (const [what, answer, status] of refusals) {
          assert.equal(answer.status, status, what);
          assertNoStore(answer, what);
        }
        const health = await fetch(`${env.base}/health`);
        assert.equal(health.headers.get('cache-control'), null, 'not the probes outside /api');
      });

      it('says no-store on the answers Node would give itself (417, a request it cannot parse)', async () => {
        const expectation = await exchange(
          env.base,
          'POST /api/v1/offers HTTP/1.1\r\nHost: x\r\nExpect: wait-for-it\r\nContent-Length: 2\r\n\r\n{}',
        );
        assert.equal(expectation.status, 417);
        assert.match(expectation.head, /\r\ncache-control: no-store\r\n/);
        const malformed = await exchange(
          env.base,
          'POST /api/v1/offers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
        );
        assert.equal(malformed.status, 400);
        assert.match(malformed.head, /\r\ncache-control: no-store\r\n/);
      });
    });
  });
}
