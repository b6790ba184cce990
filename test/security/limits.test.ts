/**
 * Oversized bodies (413) and slow clients, against the real server on a port. Kept apart
 * from fuzz.test.ts because it needs a listening socket and raw TCP clients.
 *
 * REQUEST_TIMEOUT is 30 s by default, and a stalled request is answered 408 a few seconds
 * after it (src/http/timeouts.ts): too slow to wait for here (clientErrors.test.ts shortens
 * it). These tests pin the configured values, show the idle time-out at work with a shortened
 * value, and show that stalled clients do not stop others from being served.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { assertErrorShape, UNLIMITED } from './support.js';

const MIB = 1024 * 1024;
/** The 30 s of src/app.ts: an upper bound, so a longer value is noticed. */
const SERVER_TIMEOUT_MS = 30_000;

interface RawClient {
  socket: net.Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>;
}

function connect(port: number, text: string | Buffer): RawClient {
  const socket = net.connect(port, '127.0.0.1');
  socket.write(text);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(Buffer.concat(chunks).toString())));
  return { socket, closed };
}

/** Resolves with the first response bytes, or rejects after `ms`. */
function firstAnswer(client: RawClient, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    client.socket.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString());
    });
  });
}

function bodyOf(raw: string): unknown {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}

for (const dialect of testedDialects()) {
  describe(`Oversized bodies and slow clients (${dialect})`, () => {
    let env: TestEnv;
    let port: number;
    let base: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: UNLIMITED });
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      port = (env.app.server.address() as net.AddressInfo).port;
      base = `http://127.0.0.1:${port}`;
    });
    after(() => env.close());

    const authorised = () => ({ authorization: `Bearer ${env.brand.apiKey}`, 'content-type': 'application/json' });

    it('answers a 2 MiB JSON body (limit 1 MiB) with 413 payload_too_large, keyed or public', async () => {
      const huge = JSON.stringify({ name: 'x'.repeat(2 * MIB) });
      for (const [method, url] of [
        ['PATCH', '/api/v1/brand'],
        ['POST', '/api/v1/offers'],
        ['POST', '/api/public/partners/apply'],
      ]) {
        const res = await fetch(`${base}${url}`, { method, headers: authorised(), body: huge });
        const body = await res.json();
        assert.equal(res.status, 413, `${method} ${url}`);
        assertErrorShape({ status: res.status, body }, `${method} ${url}`);
        assert.equal((body as { error: { code: string } }).error.code, 'payload_too_large');
      }
    });

    it('answers 413 or 415, never 5xx, for 2 MiB in other content types and in chunks', async () => {
      for (const type of ['text/plain', 'application/octet-stream', 'multipart/form-data; boundary=x']) {
        const res = await fetch(`${base}/api/v1/offers`, {
          method: 'POST',
          headers: { ...authorised(), 'content-type': type },
          body: 'x'.repeat(2 * MIB),
        });
        assert.ok([413, 415].includes(res.status), `${type} → ${res.status}`);
        assertErrorShape({ status: res.status, body: await res.json() }, type);
      }
      const chunks = (async function* () {
        for (let i = 0; i < 32; i++)
          yield new TextEncoder().encode(`${i === 0 ? '{"name":"' : ''}${'y'.repeat(64 * 1024)}`);
      })();
      const res = await fetch(`${base}/api/v1/brand`, {
        method: 'PATCH',
        headers: authorised(),
        body: ReadableStream.from(chunks),
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 413);
      assertErrorShape({ status: res.status, body: await res.json() }, 'chunked');
    });

    it('refuses an announced 2 GiB body at once, without waiting for the bytes', async () => {
      const client = connect(
        port,
        `POST /api/v1/offers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${env.brand.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${2 * 1024 * MIB}\r\n\r\n{"name":"`,
      );
      const answer = await firstAnswer(client, 2000);
      client.socket.destroy();
      assert.match(answer, /^HTTP\/1\.1 413 /);
      assertErrorShape({ status: 413, body: bodyOf(answer) }, 'announced 2 GiB');
    });

    it('serves other clients while 100 stalled requests hold sockets', async () => {
      const stalled: RawClient[] = [];
      for (let i = 0; i < 50; i++) {
        // Headers never finished…
        stalled.push(
          connect(port, `GET /api/v1/brand HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${env.brand.apiKey}\r\n`),
        );
        // …and a body that never arrives in full.
        stalled.push(
          connect(
            port,
            `PATCH /api/v1/brand HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${env.brand.apiKey}\r\n` +
              'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
          ),
        );
      }
      try {
        await new Promise((resolve) => setTimeout(resolve, 100));
        // Served while every stalled socket is still held open (checked after): no stopwatch,
        // which a busy machine could break without the server being at fault.
        for (let i = 0; i < 10; i++) {
          assert.equal((await fetch(`${base}/health`)).status, 200);
          const brand = await fetch(`${base}/api/v1/brand`, { headers: authorised() });
          assert.equal(brand.status, 200);
          assert.equal(((await brand.json()) as { id: string }).id, env.brand.id);
        }
        assert.equal(stalled.length, 100);
        assert.ok(
          stalled.every((c) => !c.socket.destroyed),
          'stalled sockets are still open (the time-outs are 30 s)',
        );
      } finally {
        for (const client of stalled) client.socket.destroy();
      }
    });

    it('configures a request time-out of at most 30 s that the idle time-out cannot pre-empt', () => {
      const server = env.app.server as typeof env.app.server & { connectionsCheckingInterval: number };
      assert.ok(server.requestTimeout > 0 && server.requestTimeout <= SERVER_TIMEOUT_MS, `${server.requestTimeout}`);
      // Headers get no longer than the whole request (a longer value makes Node swap the two).
      assert.ok(server.headersTimeout <= server.requestTimeout, `${server.headersTimeout}`);
      // The idle time-out closes a silent socket without a word: it must come after Node's
      // check has found the request expired and answered 408.
      const answeredBy = server.requestTimeout + server.connectionsCheckingInterval;
      assert.ok(server.timeout > answeredBy, `${server.timeout} > ${answeredBy}`);
      assert.ok(server.timeout <= 2 * SERVER_TIMEOUT_MS, `${server.timeout}`);
    });

    it('closes a socket that goes silent mid-request once the idle time-out passes (shortened to 300 ms here)', async () => {
      const configured = env.app.server.timeout;
      env.app.server.timeout = 300;
      try {
        const started = performance.now();
        const client = connect(
          port,
          `PATCH /api/v1/brand HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${env.brand.apiKey}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
        );
        // A failsafe far beyond the time-out, so a broken time-out fails the test instead of
        // hanging it; whether it fired tells who closed the socket, not how fast a machine is.
        let closedByUs = false;
        const failsafe = setTimeout(() => {
          closedByUs = true;
          client.socket.destroy();
        }, 20_000);
        await client.closed;
        clearTimeout(failsafe);
        assert.equal(closedByUs, false, 'the server closed the silent socket');
        const elapsed = performance.now() - started;
        assert.ok(elapsed >= 250, `the server waited for its time-out first (closed after ${Math.round(elapsed)} ms)`);
      } finally {
        env.app.server.timeout = configured;
      }
    });

    it('is healthy afterwards', async () => {
      assert.equal((await fetch(`${base}/health`)).status, 200);
      assert.equal((await fetch(`${base}/ready`)).status, 200);
      const brand = await fetch(`${base}/api/v1/brand`, { headers: authorised() });
      assert.equal(brand.status, 200);
    });
  });
}
