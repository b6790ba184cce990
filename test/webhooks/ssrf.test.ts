import assert from 'node:assert/strict';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { newId } from '../../src/ids.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { Sender } from '../../src/modules/deliveries/sender.js';
import { isPublicAddress } from '../../src/modules/deliveries/ssrf.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, subscribe } from './harness.js';

const HOOKS = '/api/public/webhooks';

/** Targets that must never receive a delivery; the same address in the WHATWG-normalised forms people type. */
const BLOCKED_URLS = [
  'http://127.0.0.1/',
  'http://localhost/',
  'http://10.0.0.1/',
  'http://172.16.5.4/',
  'http://192.168.1.1/',
  'http://169.254.169.254/latest/meta-data',
  'http://[::1]/',
  'http://[fd00::1]/',
  'http://[fe80::1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://0.0.0.0/',
  'http://2130706433/',
  'http://0x7f.0.0.1/',
  'http://0177.0.0.1/',
  'http://100.64.0.1/',
  'http://[::ffff:0:127.0.0.1]/',
  'http://[2002:7f00:1::]/',
];

const BLOCKED_ADDRESSES = [
  '127.0.0.1',
  '127.255.255.254',
  '10.0.0.1',
  '172.16.5.4',
  '192.168.1.1',
  '169.254.169.254',
  '::1',
  'fd00::1',
  'fe80::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.0.0.1',
  '0.0.0.0',
  '100.64.0.1',
  '::',
  // SIIT (::ffff:0:0/96) and 6to4 (2002::/16) forms of 127.0.0.1, which a deny-list missed.
  '::ffff:0:127.0.0.1',
  '::ffff:0:7f00:1',
  '2002:7f00:1::',
  '64:ff9b::7f00:1',
  '2001:db8::1',
  '3fff::1',
];
const PUBLIC_ADDRESSES = [
  '93.184.216.34',
  '8.8.8.8',
  '1.1.1.1',
  '2606:4700::1111',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
];

describe('isPublicAddress', () => {
  for (const address of BLOCKED_ADDRESSES) {
    it(`says ${address} is not public`, () => assert.equal(isPublicAddress(address), false));
  }
  for (const address of PUBLIC_ADDRESSES) {
    it(`says ${address} is public`, () => assert.equal(isPublicAddress(address), true));
  }
  it('says the IPv4-compatible form ::7f00:1 of 127.0.0.1 (how URLs write [::127.0.0.1]) is not public', () => {
    assert.equal(isPublicAddress('::127.0.0.1'), false);
    assert.equal(isPublicAddress('::7f00:1'), false);
    assert.equal(isPublicAddress('::a9fe:a9fe'), false);
  });

  it('refuses every 6to4 address, even one embedding a public IPv4 address (6to4 is deprecated, RFC 7526)', () => {
    assert.equal(isPublicAddress('2002:808:808::1'), false);
  });

  it('says a hostname or a number that is not an IP literal is not public', () => {
    for (const text of ['localhost', 'example.com', '2130706433', '0x7f.0.0.1', '']) {
      assert.equal(isPublicAddress(text), false, text);
    }
  });
});

for (const dialect of testedDialects()) {
  describe(`SSRF guard at subscription time (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
    });
    after(() => env.close());

    for (const url of BLOCKED_URLS) {
      it(`refuses a subscription to ${url} with 422`, async () => {
        const res = await env.request('POST', HOOKS, { body: { url, events: ['cap.reached'] } });
        const error = expectError(res, 422, 'validation_error');
        assert.equal(error.details?.[0]?.path, 'url');
        assert.match(error.details?.[0]?.message ?? '', /not a public address/);
      });
    }

    it('refuses http://[::127.0.0.1]/, which URL parsing turns into [::7f00:1], with 422', async () => {
      const res = await env.request('POST', HOOKS, { body: { url: 'http://[::127.0.0.1]/', events: ['cap.reached'] } });
      expectError(res, 422, 'validation_error');
    });

    it('refuses moving an existing subscription to a private address with PATCH', async () => {
      const sub = await subscribe(env, { url: 'http://93.184.216.34/hook' });
      const res = await env.request('PATCH', `${HOOKS}/${sub.id}`, { body: { url: 'http://10.0.0.1/' } });
      expectError(res, 422, 'validation_error');
      assert.equal((await env.request('GET', `${HOOKS}/${sub.id}`)).body.url, 'http://93.184.216.34/hook');
    });

    it('accepts a public IP literal without any DNS lookup or connection to it', async () => {
      const lookups: string[] = [];
      const dials: string[] = [];
      const originalLookup = dns.lookup;
      const originalConnect = net.Socket.prototype.connect;
      dns.lookup = ((hostname: string, ...rest: unknown[]) => {
        lookups.push(hostname);
        return (originalLookup as (...args: unknown[]) => unknown)(hostname, ...rest);
      }) as typeof dns.lookup;
      syncBuiltinESMExports();
      net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
        dials.push(JSON.stringify(args[0]));
        return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
      } as typeof originalConnect;
      try {
        const literal = await env.request('POST', HOOKS, {
          body: { url: 'http://93.184.216.34/', events: ['cap.reached'] },
        });
        assert.equal(literal.status, 201, JSON.stringify(literal.body));
        assert.equal(lookups.length, 0, `no DNS lookup for a literal, saw: ${lookups.join(', ')}`);
        assert.ok(!dials.some((d) => d.includes('93.184.216.34')), 'no connection to the target');
        // Control: a hostname is looked up, which shows the spy sees the guard's lookups.
        await env.request('POST', HOOKS, { body: { url: 'http://localhost/', events: ['cap.reached'] } });
        assert.ok(lookups.includes('localhost'), `lookups seen: ${lookups.join(', ')}`);
      } finally {
        dns.lookup = originalLookup;
        syncBuiltinESMExports();
        net.Socket.prototype.connect = originalConnect;
      }
    });
  });

  describe(`SSRF guard at dial time (${dialect})`, () => {
    let env: TestEnv;
    let receiver: Receiver;
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
      receiver = await Receiver.answering(200);
    });
    afterEach(() => clearWebhooks(env));
    after(async () => {
      await receiver.close();
      await env.close();
    });

    /** A subscription saved while private networks were allowed: written straight to the table. */
    async function savedEarlier(url: string): Promise<string> {
      const now = env.clock.now();
      const id = newId('sub', now);
      await env.ctx.db.transact((trx) =>
        trx
          .insertInto('webhook_subscriptions')
          .values({
            id,
            brand_id: env.brand.id,
            url,
            events: JSON.stringify(['partner.approved']),
            secret: null,
            status: 'active',
            created_at: now,
            updated_at: now,
          })
          .execute(),
      );
      return id;
    }

    async function expectRefusedAndRetried(subscriptionId: string, address = /127\.0\.0\.1/): Promise<void> {
      const dispatcher = new Dispatcher(env.ctx);
      try {
        await firePartnerApproved(env);
        const firstAt = env.clock.now();
        assert.equal(await dispatcher.runOnce(), 1);
        const [row] = await deliveriesOf(env, subscriptionId);
        assert.equal(row?.status, 'retry_scheduled');
        assert.equal(row?.next_attempt_at, firstAt + 1000);
        env.clock.advance(999);
        assert.equal(await dispatcher.runOnce(), 0);
        env.clock.advance(1);
        assert.equal(await dispatcher.runOnce(), 1, 'retried on the schedule');
        const log = await env.request('GET', `/api/public/webhook-deliveries/${row?.id}`);
        assert.equal(log.body.attempts.length, 2);
        for (const attempt of log.body.attempts) {
          assert.equal(attempt.statusCode, null);
          assert.match(attempt.error, /non-public address/);
          assert.match(attempt.error, address);
        }
        assert.equal(receiver.requests.length, 0, 'the receiver got nothing');
      } finally {
        await dispatcher.close();
      }
    }

    it('refuses to dial a loopback IP literal saved before the guard was on, and retries per schedule', async () => {
      await expectRefusedAndRetried(await savedEarlier(receiver.url));
    });

    for (const [url, address] of [
      ['http://[::ffff:0:127.0.0.1]', /::ffff:0:7f00:1/],
      ['http://[2002:7f00:1::]', /2002:7f00:1::/],
    ] as const) {
      it(`refuses to dial ${url}/ (127.0.0.1 embedded in IPv6) saved before the guard was on`, async () => {
        await expectRefusedAndRetried(await savedEarlier(`${url}:${receiver.port}/hook`), address);
      });
    }

    it('refuses a hostname that resolves to loopback through the guarded lookup', async () => {
      await expectRefusedAndRetried(await savedEarlier(`http://localhost:${receiver.port}/hook`));
    });

    it('refuses loopback with a Sender built to disallow private networks in an env that allows them', async () => {
      const open = await createTestEnv(dialect);
      const dispatcher = new Dispatcher(open.ctx, { sender: new Sender(1000, false) });
      const allowed = new Dispatcher(open.ctx);
      try {
        const sub = await subscribe(open, { url: `http://localhost:${receiver.port}/hook` });
        await firePartnerApproved(open);
        assert.equal(await dispatcher.runOnce(), 1);
        const [row] = await deliveriesOf(open, sub.id);
        assert.equal(row?.status, 'retry_scheduled');
        assert.equal(receiver.requests.length, 0);
        const log = await open.request('GET', `/api/public/webhook-deliveries/${row?.id}`);
        assert.match(log.body.attempts[0].error, /non-public address/);
        // Control: the same delivery does reach the receiver when private networks are allowed.
        open.clock.advance(1000);
        assert.equal(await allowed.runOnce(), 1);
        assert.equal(receiver.requests.length, 1);
      } finally {
        await dispatcher.close();
        await allowed.close();
        await open.close();
      }
    });
  });
}
