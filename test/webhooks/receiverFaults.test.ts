/**
 * Receiver faults not already covered by delivery.test.ts (400/410/500/503/304/302, a
 * receiver that never answers, a body that stalls, a connection reset) and
 * deliveryLog.test.ts (the first 16 KiB of a body a little over the limit): invalid HTTP,
 * headers that come only after the time-out, a body that keeps trickling past the time-out
 * (each chunk within undici's per-chunk body time-out), a huge (5 MB) answer, a TLS error,
 * and isolation: a hanging receiver never delays a healthy one. Each fault is asserted in the
 * delivery log (GET /api/public/webhook-deliveries/:id) and retried on schedule.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { Sender } from '../../src/modules/deliveries/sender.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, subscribe } from './harness.js';

const TIMEOUT_MS = 300;
const FIRST_RETRY_MS = 1000;
const LIMIT = 16 * 1024;
/** The time-out of the isolation test: room for a loaded machine to serve the healthy receiver first. */
const HANGING_TIMEOUT_MS = 2000;

interface LoggedAttempt {
  number: number;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
}

/** A raw TCP server: `onConnection` decides what bytes (if any) each connection gets. */
async function rawServer(onConnection: (socket: Socket) => void): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Reads the request head (and whatever body comes with it), then calls `then` once. */
function afterRequest(socket: Socket, then: () => void): void {
  let done = false;
  socket.on('data', (chunk: Buffer) => {
    if (done || !chunk.includes('\r\n\r\n')) return;
    done = true;
    then();
  });
}

for (const dialect of testedDialects()) {
  describe(`webhook receiver faults (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    const cleanups: Array<() => Promise<void>> = [];
    const timers = new Set<NodeJS.Timeout>();
    const later = (ms: number, fn: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
      }, ms);
      timers.add(timer);
    };
    const receiver = async (answer?: Receiver['answer']) => {
      const started = await Receiver.start(answer);
      cleanups.push(() => started.close());
      return started;
    };
    const raw = async (onConnection: (socket: Socket) => void) => {
      const started = await rawServer(onConnection);
      cleanups.push(() => started.close());
      return started;
    };

    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms` } });
      dispatcher = new Dispatcher(env.ctx);
    });
    afterEach(async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all(cleanups.splice(0).map((close) => close()));
      await clearWebhooks(env);
    });
    after(async () => {
      await dispatcher.close();
      await env.close();
    });

    async function onlyDelivery(subscriptionId: string) {
      const rows = await deliveriesOf(env, subscriptionId);
      assert.equal(rows.length, 1);
      const res = await env.request('GET', `/api/public/webhook-deliveries/${rows[0]?.id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    }

    /**
     * Subscribes `url`, fires one event, makes the first attempt and checks it is logged and
     * retried one second later; then makes the second attempt on time. Returns both attempts.
     */
    async function attemptTwice(url: string): Promise<{ attempts: LoggedAttempt[] }> {
      const sub = await subscribe(env, { url });
      await firePartnerApproved(env);
      const firstAt = env.clock.now();
      assert.equal(await dispatcher.runOnce(), 1);
      let delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.status, 'retry_scheduled');
      assert.equal(delivery.attemptCount, 1);
      assert.equal(delivery.nextAttemptAt, new Date(firstAt + FIRST_RETRY_MS).toISOString());
      env.clock.advance(FIRST_RETRY_MS - 1);
      assert.equal(await dispatcher.runOnce(), 0, 'not due 1 ms early');
      env.clock.advance(1);
      assert.equal(await dispatcher.runOnce(), 1, 'due exactly one second after the first attempt');
      delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.attemptCount, 2);
      assert.equal(delivery.attempts.length, 2);
      assert.equal(delivery.status, 'retry_scheduled');
      return { attempts: delivery.attempts };
    }

    it('invalid HTTP (garbage bytes instead of a status line): no status code, a parse error, retried', async () => {
      let connections = 0;
      const server = await raw((socket) => {
        connections += 1;
        afterRequest(socket, () => socket.end('NOT HTTP\r\n\r\n'));
      });
      const { attempts } = await attemptTwice(server.url);
      assert.equal(connections, 2);
      for (const attempt of attempts) {
        assert.equal(attempt.statusCode, null);
        assert.equal(attempt.responseBody, null);
        assert.match(attempt.error ?? '', /HPE_|parse|invalid|response/i, `error: ${attempt.error}`);
        assert.doesNotMatch(attempt.error ?? '', /time/i, 'an invalid answer fails at once, not at the time-out');
      }
    });

    it('slow headers (the answer comes only after the time-out): a time-out error, retried', async () => {
      const server = await raw((socket) => {
        afterRequest(socket, () =>
          later(TIMEOUT_MS + 400, () => {
            if (!socket.destroyed) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
          }),
        );
      });
      const { attempts } = await attemptTwice(server.url);
      for (const attempt of attempts) {
        assert.equal(attempt.statusCode, null);
        assert.match(attempt.error ?? '', /time/i, `error: ${attempt.error}`);
        // It waited for the time-out (a lower bound a busy machine cannot break) and gave up
        // there: the 200 that comes 400 ms later was never read (no status code).
        assert.ok(attempt.latencyMs >= TIMEOUT_MS - 50, `latency ${attempt.latencyMs}`);
      }
    });

    it('a slow body that keeps trickling past the time-out (a byte every 50 ms): a time-out error, retried', async () => {
      const server = await raw((socket) => {
        afterRequest(socket, () => {
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\n\r\n');
          const drip = setInterval(() => {
            if (socket.destroyed) clearInterval(drip);
            else socket.write('x');
          }, 50);
          socket.on('close', () => clearInterval(drip));
        });
      });
      const { attempts } = await attemptTwice(server.url);
      for (const attempt of attempts) {
        // The status line arrived, but the attempt did not complete: it counts as a failure.
        assert.equal(attempt.statusCode, null);
        assert.match(attempt.error ?? '', /time/i, `error: ${attempt.error}`);
        // The total time-out applies to the body: the trickle (1,000 bytes, 50 s) never completed.
        assert.ok(attempt.latencyMs >= TIMEOUT_MS - 50, `latency ${attempt.latencyMs}`);
      }
    });

    it('a huge (5 MB) 200 answer: succeeds at once, keeps exactly the first 16 KiB, stops reading', async () => {
      const size = 5 * 1024 * 1024;
      // Distinct text so an off-by-one in the cut would show.
      const huge = Buffer.from(
        Array.from({ length: 1_000_000 }, (_, i) => `${i},`)
          .join('')
          .slice(0, size),
      );
      assert.equal(huge.length, size);
      let bytesWritten = 0;
      const server: HttpServer = createHttpServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(size) });
        // Write in 64 KiB pieces, respecting back-pressure, and count what got out.
        let offset = 0;
        const pump = () => {
          while (offset < size) {
            const piece = huge.subarray(offset, offset + 64 * 1024);
            offset += piece.length;
            const ok = res.write(piece, () => {
              bytesWritten += piece.length;
            });
            if (!ok) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
      });
      const sockets = new Set<Socket>();
      server.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      cleanups.push(async () => {
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      });
      const { port } = server.address() as AddressInfo;
      const sub = await subscribe(env, { url: `http://127.0.0.1:${port}/hook` });
      await firePartnerApproved(env);
      assert.equal(await dispatcher.runOnce(), 1);
      const delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.nextAttemptAt, null);
      const [attempt] = delivery.attempts as LoggedAttempt[];
      assert.equal(attempt?.statusCode, 200);
      assert.equal(attempt?.error, null);
      assert.equal(attempt?.responseBody, huge.subarray(0, LIMIT).toString('utf8'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(bytesWritten < size, `the sender stopped reading: ${bytesWritten} of ${size} bytes went out`);
    });

    it('TLS error (https:// to a plain-HTTP server): a clear TLS error, no status code, retried', async () => {
      const r = await receiver();
      const { attempts } = await attemptTwice(r.url.replace('http://', 'https://'));
      assert.equal(r.requests.length, 0, 'no HTTP request was understood by the plain server');
      for (const attempt of attempts) {
        assert.equal(attempt.statusCode, null);
        assert.equal(attempt.responseBody, null);
        assert.match(attempt.error ?? '', /SSL|TLS|EPROTO|wrong version/i, `error: ${attempt.error}`);
        assert.doesNotMatch(attempt.error ?? '', /time/i, 'fails at once, not at the time-out');
      }
    });

    it('a 500 answer with a NUL byte (bad\\0byte): logged with U+FFFD for the NUL, retried on schedule to failed', async () => {
      const r = await receiver(() => ({ status: 500, body: Buffer.from('bad\0byte') }));
      const sub = await subscribe(env, { url: r.url });
      await firePartnerApproved(env);
      assert.equal(await dispatcher.runOnce(), 1);
      let delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.status, 'retry_scheduled');
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].statusCode, 500);
      assert.equal(delivery.attempts[0].responseBody, 'bad\uFFFDbyte');
      for (const gap of [1_000, 5_000, 30_000, 300_000, 1_800_000]) {
        env.clock.advance(gap);
        assert.equal(await dispatcher.runOnce(), 1);
      }
      delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attempts.length, 6);
      assert.equal(r.requests.length, 6, 'six sends, no more');
      env.clock.advance(3_600_000);
      assert.equal(await dispatcher.runOnce(), 0, 'nothing is sent after the delivery failed');
    });

    it('gives up on a delivery whose sends could not be recorded five times in a row: failed, logged, not sent again', async () => {
      const r = await receiver();
      const sub = await subscribe(env, { url: r.url });
      await firePartnerApproved(env);
      const [row] = await deliveriesOf(env, sub.id);
      assert.ok(row);
      // As five sends that died before their outcome was stored would leave it.
      await env.ctx.db.transact((trx) =>
        trx.updateTable('webhook_deliveries').set({ unrecorded_sends: 5 }).where('id', '=', row.id).execute(),
      );
      assert.equal(await dispatcher.runOnce(), 1);
      const delivery = await onlyDelivery(sub.id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.nextAttemptAt, null);
      assert.equal(delivery.attempts.length, 1);
      assert.match(delivery.attempts[0].error, /gave up: the outcome of 5 sends in a row could not be recorded/);
      assert.equal(r.requests.length, 0, 'not sent a sixth time');
      assert.ok(env.logs.some((line) => line.includes('giving up on a delivery')));
    });

    it('sends a delivery again after four unrecorded sends (the cap is not reached)', async () => {
      const r = await receiver();
      const sub = await subscribe(env, { url: r.url });
      await firePartnerApproved(env);
      const [row] = await deliveriesOf(env, sub.id);
      assert.ok(row);
      await env.ctx.db.transact((trx) =>
        trx.updateTable('webhook_deliveries').set({ unrecorded_sends: 4 }).where('id', '=', row.id).execute(),
      );
      assert.equal(await dispatcher.runOnce(), 1);
      assert.equal((await onlyDelivery(sub.id)).status, 'succeeded');
      assert.equal(r.requests.length, 1);
      const [reset] = await deliveriesOf(env, sub.id);
      assert.equal(reset?.unrecorded_sends, 0, 'a recorded attempt resets the count');
    });

    it('a hanging receiver never delays a healthy one: its deliveries go through promptly', async () => {
      const hanging = await receiver(() => ({ hang: true }));
      const healthy = await receiver();
      const hangingSub = await subscribe(env, { url: hanging.url });
      const healthySub = await subscribe(env, { url: healthy.url });
      const events = 20; // more than the per-subscription concurrency (16) of the hanging one
      for (let i = 0; i < events; i++) await firePartnerApproved(env);
      // Not a stopwatch (a busy machine stalls any), but an order: the healthy receiver has
      // everything while the hanging receiver's first attempts are still open, i.e. before
      // any of them timed out. The longer time-out gives that order room on a loaded machine.
      const patient = new Dispatcher(env.ctx, {
        sender: new Sender(HANGING_TIMEOUT_MS, env.ctx.config.webhookAllowPrivateNetworks),
      });
      cleanups.push(() => patient.close());
      const run = patient.runOnce();
      await healthy.waitForRequests(events, 10_000);
      const hangingAttempts = await env.ctx.db.read
        .selectFrom('webhook_attempts')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
        .select('webhook_attempts.number')
        .where('webhook_deliveries.subscription_id', '=', hangingSub.id)
        .execute();
      assert.equal(hangingAttempts.length, 0, 'no hanging attempt had ended when the healthy receiver had all');
      assert.ok(hanging.requests.length >= 1, 'the hanging receiver was tried meanwhile');
      const made = await run;
      assert.ok(made >= events + 1, `attempts made: ${made}`);
      const healthyRows = await deliveriesOf(env, healthySub.id);
      assert.equal(healthyRows.length, events);
      assert.ok(healthyRows.every((row) => row.status === 'succeeded'));
      const hangingRows = await deliveriesOf(env, hangingSub.id);
      assert.equal(hangingRows.length, events);
      // Every hanging attempt timed out (the last four after the first sixteen freed their slots).
      assert.ok(
        hangingRows.every((row) => row.status === 'retry_scheduled'),
        JSON.stringify(hangingRows.map((row) => row.status)),
      );
      const attempted = hangingRows[0];
      assert.ok(attempted);
      const logged = await env.request('GET', `/api/public/webhook-deliveries/${attempted.id}`);
      assert.match(logged.body.attempts[0].error ?? '', /time/i);
    });
  });
}
