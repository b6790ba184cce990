/**
 * Requests Node's HTTP parser refuses before Fastify sees them, sent as raw bytes to the real
 * server on a port: every answer must still be the API's `{ error: { code, message } }`.
 * Nothing here touches storage, so SQLite alone covers it.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv } from '../helpers.js';
import { assertErrorShape } from './support.js';

interface RawAnswer {
  status: number;
  headers: string;
  body: unknown;
}

/** Sends `bytes` on a fresh connection and parses the one answer the server sends before closing. */
function exchange(port: number, bytes: string | Buffer, afterMs = 2000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error(`connection still open after ${afterMs} ms`)), afterMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]);
      try {
        resolve({ status, headers: head.toLowerCase(), body: JSON.parse(text.slice(head.length + 4)) });
      } catch {
        reject(new Error(`not a JSON answer: ${JSON.stringify(text.slice(0, 300))}`));
      }
    });
    socket.write(bytes);
  });
}

/**
 * The requestId an answer hands out is in the log, on one line with the status, so an
 * operator handed it finds the request; that line holds none of the request's bytes.
 */
function assertLoggedOnce(env: TestEnv, answer: RawAnswer, secrets: string[] = []): void {
  const { requestId } = (answer.body as { error: { requestId: string } }).error;
  const lines = env.logs.filter((line) => line.includes(`"reqId":"${requestId}"`));
  assert.equal(lines.length, 1, `one log line with reqId ${requestId}: ${env.logs.slice(-3).join('')}`);
  const logged = JSON.parse(lines[0] ?? '');
  assert.equal(logged.status ?? logged.res?.statusCode, answer.status);
  for (const secret of [...secrets, 'X-Filler', 'bbbbbbbbbb', '0xc3', 'zz\r\n']) {
    assert.equal((lines[0] ?? '').includes(secret), false, `the log line holds no ${secret}`);
  }
}

const HOST = 'Host: 127.0.0.1\r\n';
const POST = `POST /api/v1/conversions HTTP/1.1\r\n${HOST}Content-Type: application/json\r\n`;

/** What the adversarial probe sent (issue #12, point 7) and what each must be answered with. */
const MALFORMED: Array<{ name: string; bytes: string | Buffer; status: number; code: string }> = [
  {
    name: 'a malformed chunked body',
    bytes: `${POST}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'Content-Length together with Transfer-Encoding',
    bytes: `${POST}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'two different Content-Length headers',
    bytes: `${POST}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
    status: 400,
    code: 'bad_request',
  },
  { name: 'a negative Content-Length', bytes: `${POST}Content-Length: -1\r\n\r\n`, status: 400, code: 'bad_request' },
  {
    name: 'raw non-ASCII bytes in the path',
    bytes: Buffer.concat([
      Buffer.from('GET /api/v1/offers/'),
      Buffer.from([0xc3, 0xa9, 0xff]),
      Buffer.from(` HTTP/1.1\r\n${HOST}\r\n`),
    ]),
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'a space inside a header name',
    bytes: `GET /health HTTP/1.1\r\n${HOST}Bad Header: x\r\n\r\n`,
    status: 400,
    code: 'bad_request',
  },
  { name: 'an unknown method', bytes: `BREW /health HTTP/1.1\r\n${HOST}\r\n`, status: 400, code: 'bad_request' },
  { name: 'no HTTP at all', bytes: 'HELLO\r\n\r\n', status: 400, code: 'bad_request' },
  {
    name: 'a URL of 17 KB',
    bytes: `GET /api/v1/offers?x=${'a'.repeat(17_000)} HTTP/1.1\r\n${HOST}\r\n`,
    status: 431,
    code: 'headers_too_large',
  },
  {
    name: 'headers of 20 KB',
    bytes: `GET /health HTTP/1.1\r\n${HOST}X-Filler: ${'b'.repeat(20_000)}\r\n\r\n`,
    status: 431,
    code: 'headers_too_large',
  },
  {
    name: 'an HTTP/1.1 request without Host',
    bytes: 'GET /health HTTP/1.1\r\n\r\n',
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'an Expect header other than 100-continue',
    bytes: `GET /health HTTP/1.1\r\n${HOST}Expect: teapot\r\n\r\n`,
    status: 417,
    code: 'expectation_failed',
  },
];

describe('answers to requests the HTTP parser refuses', () => {
  let env: TestEnv;
  let port: number;
  before(async () => {
    env = await createTestEnv('sqlite');
    await env.app.listen({ port: 0, host: '127.0.0.1' });
    port = (env.app.server.address() as net.AddressInfo).port;
  });
  after(() => env.close());

  for (const probe of MALFORMED) {
    it(`answers ${probe.name} with ${probe.status} ${probe.code} in the API's error shape`, async () => {
      const answer = await exchange(port, probe.bytes);
      assert.equal(answer.status, probe.status);
      assertErrorShape(answer, probe.name);
      assert.equal((answer.body as { error: { code: string } }).error.code, probe.code);
      assert.match(answer.headers, /content-type: application\/json/);
      assertLoggedOnce(env, answer);
    });
  }

  it('still serves an HTTP/1.0 request without Host', async () => {
    const answer = await exchange(port, 'GET /health HTTP/1.0\r\n\r\n');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { status: 'ok' });
  });
});

/** A raw connection whose every byte received is kept; `closed` settles when the server closes it. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, closed, text: () => Buffer.concat(chunks).toString() };
}

describe('answers while the server is stopping or the client is too slow', () => {
  it('answers a request in flight at shutdown with Connection: close, and one arriving during the drain with 503', async () => {
    const env = await createTestEnv('sqlite');
    let releaseSlow = () => {};
    const slowStarted = new Promise<void>((started) => {
      env.app.get('/slow-for-test', async () => {
        started();
        await new Promise<void>((resolve) => {
          releaseSlow = resolve;
        });
        return { slow: true };
      });
    });
    const draining = new Promise<void>((resolve) => env.app.addHook('preClose', async () => resolve()));
    try {
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (env.app.server.address() as net.AddressInfo).port;
      // A keep-alive request in flight when the drain starts…
      const inFlight = connect(port);
      inFlight.socket.write(`GET /slow-for-test HTTP/1.1\r\n${HOST}\r\n`);
      await slowStarted;
      // …and one whose head is still arriving: the drain does not close its connection.
      const arriving = connect(port);
      arriving.socket.write(`GET /health HTTP/1.1\r\n${HOST}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closing = env.app.close();
      await draining;
      arriving.socket.write('\r\n');
      await arriving.closed;
      await new Promise((resolve) => setTimeout(resolve, 100));
      releaseSlow();
      await inFlight.closed;
      await closing;

      const answer = inFlight.text();
      assert.match(answer, /^HTTP\/1\.1 200 /, 'the request in flight is finished');
      const head = answer.slice(0, answer.indexOf('\r\n\r\n')).toLowerCase();
      assert.match(head, /\r\nconnection: close(\r\n|$)/, 'the client does not reuse a connection that is ending');
      const refused = arriving.text();
      assert.match(refused, /^HTTP\/1\.1 503 /);
      assert.match(refused.toLowerCase(), /retry-after: 1/);
      assert.match(refused.toLowerCase(), /connection: close/);
      const body = JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4));
      assertErrorShape({ status: 503, body }, 'during shutdown');
      assert.equal(body.error.code, 'service_unavailable');
    } finally {
      await env.close().catch(() => {});
    }
  });

  it('holds clients still sending to REQUEST_TIMEOUT while it drains, so a slow one cannot hold the exit', async () => {
    const env = await createTestEnv('sqlite', { env: { REQUEST_TIMEOUT: '300ms' } });
    try {
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (env.app.server.address() as net.AddressInfo).port;
      const promise = (key: string) =>
        `PATCH /api/v1/brand HTTP/1.1\r\n${HOST}Authorization: Bearer ${key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na';
      // Answered 401 before its body, which then never ends: the connection waits for the rest.
      const answered = connect(port);
      answered.socket.write(promise('afk_not_a_key'));
      // A valid key: nothing is answered before the whole body, which never comes.
      const sending = connect(port);
      sending.socket.write(promise(env.brand.apiKey));
      while (!answered.text().includes('\r\n\r\n')) await new Promise((resolve) => setTimeout(resolve, 20));
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        env.app.close().then(() => 'closed'),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve('still draining after 10 s'), 10_000);
        }),
      ]);
      clearTimeout(timer);
      assert.equal(outcome, 'closed', 'the drain ends once REQUEST_TIMEOUT has passed for both clients');
      await Promise.all([answered.closed, sending.closed]);
      assert.match(answered.text(), /^HTTP\/1\.1 401 /);
      assert.equal(
        answered.text().match(/HTTP\/1\.1 /g)?.length,
        1,
        'nothing more is said to a request already answered',
      );
      const timedOut = sending.text();
      assert.match(timedOut, /^HTTP\/1\.1 408 /);
      assert.equal(JSON.parse(timedOut.slice(timedOut.indexOf('\r\n\r\n') + 4)).error.code, 'request_timeout');
    } finally {
      await env.close().catch(() => {});
    }
  });

  // REQUEST_TIMEOUT alone is shortened: the server's other time-outs follow from it as in production.
  describe('a client too slow to send its request (REQUEST_TIMEOUT=300ms)', () => {
    let env: TestEnv;
    let port: number;
    before(async () => {
      env = await createTestEnv('sqlite', { env: { REQUEST_TIMEOUT: '300ms' } });
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      port = (env.app.server.address() as net.AddressInfo).port;
    });
    after(() => env.close());

    it('is answered 408 request_timeout when its headers never finish', async () => {
      const answer = await exchange(port, `GET /health HTTP/1.1\r\n${HOST}X-Never: ending`, 5000);
      assert.equal(answer.status, 408);
      assertErrorShape(answer, 'stalled headers');
      assert.equal((answer.body as { error: { code: string } }).error.code, 'request_timeout');
      assertLoggedOnce(env, answer, ['X-Never', 'ending']);
    });

    it('is answered 408 request_timeout when its body stalls after the headers', async () => {
      const head =
        `PATCH /api/v1/brand HTTP/1.1\r\n${HOST}Authorization: Bearer ${env.brand.apiKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n';
      // 16 of the 100 bytes promised, then nothing: the route is reading the body when time runs out.
      const answer = await exchange(port, `${head}{"name": "Slow "`, 5000);
      assert.equal(answer.status, 408);
      assertErrorShape(answer, 'stalled body');
      assert.equal((answer.body as { error: { code: string } }).error.code, 'request_timeout');
      assert.match(answer.headers, /connection: close/);
      assertLoggedOnce(env, answer, [env.brand.apiKey, 'Slow']);
      const brand = await env.app.inject({
        url: '/api/v1/brand',
        headers: { authorization: `Bearer ${env.brand.apiKey}` },
      });
      assert.notEqual(brand.json().name, 'Slow ', 'the cut-off body changed nothing');
    });
  });
});
