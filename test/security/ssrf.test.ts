/**
 * SSRF matrix for outbound URLs (webhook subscriptions and partner postback templates) with
 * private networks disallowed: every spelling of a non-public address is 422 at save time;
 * redirects are never followed; and an address that changes between the check and the dial
 * (DNS rebinding) is refused at dial time.
 */
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { Sender } from '../../src/modules/deliveries/sender.js';
import { guardedLookup } from '../../src/modules/deliveries/ssrf.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { Receiver } from '../receiver.js';
import { UNLIMITED } from './support.js';

/** Hosts that must never be a target, in the spellings people (and attackers) type. */
const BLOCKED_HOSTS = [
  '10.0.0.1',
  '10.255.255.254',
  '172.16.0.1',
  '172.31.255.254',
  '192.168.0.1',
  '127.0.0.1',
  '127.1',
  '127.0.0.1:8080',
  'user:pass@127.0.0.1',
  '[::1]',
  '169.254.169.254',
  '[fd00::1]',
  '[fc00::1]',
  '[fe80::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:10.0.0.1]',
  '[::ffff:7f00:1]',
  '[::ffff:169.254.169.254]',
  '[0:0:0:0:0:ffff:127.0.0.1]',
  '[64:ff9b::7f00:1]',
  '[::127.0.0.1]',
  '[::7f00:1]',
  '[::a9fe:a9fe]',
  '0.0.0.0',
  '0',
  '[::]',
  '2130706433',
  '017700000001',
  '0177.0.0.1',
  '0x7f000001',
  '0x7f.0.0.1',
  '0x7f.1',
  '①②⑦.⓪.⓪.①',
  '100.64.0.1',
  '224.0.0.1',
  '255.255.255.255',
  'localhost',
  'LOCALHOST',
  'localhost.',
];

const WEBHOOKS = '/api/public/webhooks';
const GUARDED = { ...UNLIMITED, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_TIMEOUT: '1s' };

/** A loopback HTTP server that records what reaches it and answers with `answer`. */
async function receiver(answer: (port: number) => { status: number; headers?: Record<string, string> }) {
  let port = 0;
  const started = await Receiver.start(() => answer(port));
  port = started.port;
  return {
    port,
    get paths() {
      return started.requests.map((r) => r.path);
    },
    close: () => started.close(),
  };
}

for (const dialect of testedDialects()) {
  describe(`SSRF: outbound URLs to non-public addresses are refused (${dialect})`, () => {
    let env: TestEnv;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: GUARDED });
      const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      partnerId = partner.body.id;
    });
    after(() => env.close());

    /** Tries the three places a URL is saved: a new subscription, an edited one, a postback template. */
    async function expectRefusedEverywhere(url: string): Promise<void> {
      const control = await env.request('POST', WEBHOOKS, {
        body: { url: 'http://93.184.216.34/h', events: ['cap.reached'] },
      });
      assert.equal(control.status, 201, 'control: a public literal is accepted');
      const attempts = {
        'POST webhooks': await env.request('POST', WEBHOOKS, { body: { url, events: ['cap.reached'] } }),
        'PATCH webhooks/:id': await env.request('PATCH', `${WEBHOOKS}/${control.body.id}`, { body: { url } }),
        'POST postbacks': await env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, {
          body: { url: `${url}?c={click_id}`, events: ['conversion.created'] },
        }),
      };
      for (const [where, res] of Object.entries(attempts)) {
        const error = expectError(res, 422, 'validation_error');
        assert.equal(error.details?.[0]?.path, 'url', `${where} ${url}`);
      }
      assert.equal((await env.request('GET', `${WEBHOOKS}/${control.body.id}`)).body.url, 'http://93.184.216.34/h');
      assert.equal((await env.request('DELETE', `${WEBHOOKS}/${control.body.id}`)).status, 204);
    }

    for (const host of BLOCKED_HOSTS) {
      it(`refuses http://${host}/ with 422 for subscriptions, edits and postback templates`, async () => {
        await expectRefusedEverywhere(`http://${host}/`);
        await expectRefusedEverywhere(`https://${host}/x`);
      });
    }

    it('refuses a host macro in a postback template, which could point anywhere at send time', async () => {
      for (const url of ['http://{sub1}/', 'http://{sub1}.example.com/', 'http://127.0.0.1{sub1}/']) {
        const res = await env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, {
          body: { url, events: ['conversion.created'] },
        });
        expectError(res, 422, 'validation_error');
      }
      const saved = await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`);
      assert.deepEqual(saved.body.data, []);
    });
  });

  describe(`Outbound URLs on this service's own host are refused (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { ...UNLIMITED, PUBLIC_URL: 'https://track.example.com' } });
    });
    after(() => env.close());

    it('refuses its tracking links and pixel as webhook and postback URLs, any scheme or case (they would click, record or loop)', async () => {
      const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      const control = await env.request('POST', WEBHOOKS, {
        body: { url: 'https://hooks.example.com/h', events: ['cap.reached'] },
      });
      assert.equal(control.status, 201, 'control: another host is accepted');
      for (const url of [
        'https://track.example.com/t/off_1/prt_1',
        'http://TRACK.example.com/postback?token=pbt_x&click_id={click_id}',
        // The same DNS name, fully qualified (the root label's dot).
        'https://track.example.com./t/off_1/prt_1',
        'http://Track.Example.COM.:80/postback?token=pbt_x&click_id={click_id}',
      ]) {
        const attempts = {
          'POST webhooks': await env.request('POST', WEBHOOKS, { body: { url, events: ['cap.reached'] } }),
          'PATCH webhooks/:id': await env.request('PATCH', `${WEBHOOKS}/${control.body.id}`, { body: { url } }),
          'POST postbacks': await env.request('POST', `/api/v1/partners/${partner.body.id}/postbacks`, {
            body: { url, events: ['conversion.created'] },
          }),
        };
        for (const [where, res] of Object.entries(attempts)) {
          const error = expectError(res, 422, 'validation_error');
          assert.match(error.details?.[0]?.message ?? '', /this service itself/, `${where} ${url}`);
        }
      }
    });
  });

  describe(`Outbound URLs on this service's own address or internationalised name are refused (${dialect})`, () => {
    it('refuses the own host however URL parsing spells it: IDNA, legacy IPv4 forms, IPv4-mapped IPv6', async () => {
      for (const [publicUrl, urls] of [
        ['https://bücher.example', ['https://BÜCHER.example./t/off_1/prt_1', 'http://xn--bcher-kva.example/postback']],
        [
          'http://127.0.0.1:8080',
          [
            'http://2130706433:8080/t/off_1/prt_1',
            'http://0x7f.1:8080/postback',
            'http://[::ffff:127.0.0.1]:8080/t/x/y',
          ],
        ],
      ] as const) {
        const env = await createTestEnv(dialect, { env: { ...UNLIMITED, PUBLIC_URL: publicUrl } });
        try {
          for (const url of urls) {
            const res = await env.request('POST', WEBHOOKS, { body: { url, events: ['cap.reached'] } });
            const error = expectError(res, 422, 'validation_error');
            assert.match(error.details?.[0]?.message ?? '', /this service itself/, `${publicUrl}: ${url}`);
          }
          const other = await env.request('POST', WEBHOOKS, {
            body: { url: 'http://127.0.0.2:8080/h', events: ['cap.reached'] },
          });
          assert.equal(other.status, 201, `control: another address is accepted (${JSON.stringify(other.body)})`);
        } finally {
          await env.close();
        }
      }
    });
  });

  describe(`A webhook URL whose host cannot be resolved (${dialect})`, () => {
    let env: TestEnv;
    const original = dns.lookup;
    before(async () => {
      env = await createTestEnv(dialect, { env: GUARDED });
      // A resolver answering each test name with the failure it is named after.
      dns.lookup = ((hostname: string, options: unknown, callback: (...args: unknown[]) => void) => {
        const failure = /^(enotfound|eai_again|etimeout|eservfail)\.test$/.exec(hostname)?.[1];
        if (!failure) return (original as (...a: unknown[]) => void)(hostname, options, callback);
        const error = Object.assign(new Error(`getaddrinfo ${failure.toUpperCase()} ${hostname}`), {
          code: failure.toUpperCase(),
          hostname,
        });
        process.nextTick(() => callback(error));
      }) as typeof dns.lookup;
      syncBuiltinESMExports();
    });
    after(async () => {
      dns.lookup = original;
      syncBuiltinESMExports();
      await env.close();
    });

    it('is 422 when the name does not exist (ENOTFOUND): the URL is wrong', async () => {
      const res = await env.request('POST', WEBHOOKS, {
        body: { url: 'https://enotfound.test/h', events: ['cap.reached'] },
      });
      const error = expectError(res, 422, 'validation_error');
      assert.match(error.details?.[0]?.message ?? '', /enotfound\.test does not resolve/);
    });

    it('is 503 with Retry-After when the resolver fails for now (EAI_AGAIN, time-out, SERVFAIL), on POST and PATCH', async () => {
      const control = await env.request('POST', WEBHOOKS, {
        body: { url: 'https://93.184.216.34/h', events: ['cap.reached'] },
      });
      assert.equal(control.status, 201, JSON.stringify(control.body));
      for (const name of ['eai_again', 'etimeout', 'eservfail']) {
        const url = `https://${name}.test/h`;
        const attempts = {
          POST: await env.request('POST', WEBHOOKS, { body: { url, events: ['cap.reached'] } }),
          PATCH: await env.request('PATCH', `${WEBHOOKS}/${control.body.id}`, { body: { url } }),
        };
        for (const [method, res] of Object.entries(attempts)) {
          const error = expectError(res, 503, 'service_unavailable');
          assert.match(error.message, new RegExp(`${name}\\.test could not be resolved right now`), method);
          assert.ok(
            Number(res.headers['retry-after']) > 0,
            `${method} ${name}: Retry-After ${res.headers['retry-after']}`,
          );
        }
      }
      const list = await env.request('GET', WEBHOOKS);
      assert.deepEqual(
        list.body.data.map((s: { url: string }) => s.url),
        ['https://93.184.216.34/h'],
        'nothing saved, nothing changed',
      );
    });
  });

  describe(`SSRF: redirects and changing DNS answers (${dialect})`, () => {
    it('records a 302 or 307 as a failed attempt and never follows it to the Location', async () => {
      const env = await createTestEnv(dialect);
      let redirectStatus = 302;
      const target = await receiver(() => ({ status: 200 }));
      const redirecting = await receiver(() => ({
        status: redirectStatus,
        headers: { location: `http://127.0.0.1:${target.port}/stolen` },
      }));
      const dispatcher = new Dispatcher(env.ctx);
      try {
        const sub = await env.request('POST', WEBHOOKS, {
          body: { url: `http://127.0.0.1:${redirecting.port}/hook`, events: ['partner.approved'] },
        });
        for (const status of [302, 307]) {
          redirectStatus = status;
          await env.request('POST', '/api/v1/partners', { body: { name: `P${status}`, email: 'p@example.com' } });
          assert.equal(await dispatcher.runOnce(), 1);
          const list = await env.request('GET', `${WEBHOOKS}/${sub.body.id}/deliveries`);
          const delivery = await env.request('GET', `/api/public/webhook-deliveries/${list.body.data[0].id}`);
          assert.equal(delivery.body.status, 'retry_scheduled', `${status} is not a success`);
          assert.equal(delivery.body.attempts[0].statusCode, status);
        }
        assert.equal(redirecting.paths.length, 2);
        assert.deepEqual(target.paths, [], 'the Location target received nothing');
      } finally {
        await dispatcher.close();
        await redirecting.close();
        await target.close();
        await env.close();
      }
    });

    it('fails the dial-time lookup of a name that resolves to loopback', async () => {
      const lookup = (allow: boolean, options: object) =>
        new Promise<unknown>((resolve, reject) =>
          guardedLookup(allow)('localhost', options as dns.LookupOptions, (error, address) =>
            error ? reject(error) : resolve(address),
          ),
        );
      for (const options of [{}, { all: true }, { family: 4 }]) {
        await assert.rejects(lookup(false, options), /non-public address/);
      }
      assert.ok(await lookup(true, {}), 'control: allowed when private networks are');
    });

    it('refuses to send to http://localhost:<port>/ at dial time, and the receiver gets nothing', async () => {
      const target = await receiver(() => ({ status: 200 }));
      const guarded = new Sender(1000, false);
      const open = new Sender(1000, true);
      try {
        const request = { url: `http://localhost:${target.port}/`, method: 'POST' as const, headers: {}, body: '{}' };
        const outcome = await guarded.send(request);
        assert.equal(outcome.statusCode, null);
        assert.match(outcome.error ?? '', /non-public address/);
        assert.deepEqual(target.paths, []);
        assert.equal((await open.send(request)).statusCode, 200, 'control: the receiver is reachable');
      } finally {
        await guarded.close();
        await open.close();
        await target.close();
      }
    });

    it('refuses a name that resolved to a public address when saved and to loopback when dialled', async () => {
      const env = await createTestEnv(dialect, { env: GUARDED });
      const target = await receiver(() => ({ status: 200 }));
      const original = dns.lookup;
      const answers: string[] = [];
      // The attacker's name server: a public address for the check, loopback for the dial.
      dns.lookup = ((hostname: string, options: unknown, callback: (...args: unknown[]) => void) => {
        if (hostname !== 'rebind.test') return (original as (...a: unknown[]) => void)(hostname, options, callback);
        const address = answers.length === 0 ? '93.184.216.34' : '127.0.0.1';
        answers.push(address);
        const all = (options as { all?: boolean }).all;
        return all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4);
      }) as typeof dns.lookup;
      syncBuiltinESMExports();
      const dispatcher = new Dispatcher(env.ctx);
      try {
        const sub = await env.request('POST', WEBHOOKS, {
          body: { url: `http://rebind.test:${target.port}/hook`, events: ['partner.approved'] },
        });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
        assert.equal(await dispatcher.runOnce(), 1);
        assert.deepEqual(answers, ['93.184.216.34', '127.0.0.1'], 'checked once, dialled once');
        const list = await env.request('GET', `${WEBHOOKS}/${sub.body.id}/deliveries`);
        const delivery = await env.request('GET', `/api/public/webhook-deliveries/${list.body.data[0].id}`);
        assert.match(delivery.body.attempts[0].error, /non-public address 127\.0\.0\.1/);
        assert.deepEqual(target.paths, [], 'the loopback receiver got nothing');
      } finally {
        dns.lookup = original;
        syncBuiltinESMExports();
        await dispatcher.close();
        await target.close();
        await env.close();
      }
    });
  });
}
