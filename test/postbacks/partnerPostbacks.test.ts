import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { Sender } from '../../src/modules/deliveries/sender.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { Receiver } from '../receiver.js';

const BROWSER = { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0' };
const AWKWARD = 'a b&c=d/é?#';
const EVENTS = ['conversion.created', 'conversion.approved', 'conversion.rejected'];
const ALL_MACROS =
  'click={click_id}&conv={conversion_id}&offer={offer_id}&partner={partner_id}&payout={payout}&cur={currency}' +
  '&status={status}&s1={sub1}&s2={sub2}&s3={sub3}&s4={sub4}&s5={sub5}&txn={txn_id}';
/** Time between the attempts of a delivery that always fails: 1s, 5s, 30s, 5m, 30m (DESIGN §5). */
const GAPS = [1_000, 5_000, 30_000, 300_000, 1_800_000];
const BAD_EVENTS = [['partner.approved'], ['conversion.created', 'cap.reached'], ['conversion.paid'], []];
const MACRO_HOSTS = [
  'http://{sub1}.example.com/pb',
  'https://x{partner_id}.example.com/',
  'http://%7Bsub1%7D.example.com/',
];
const NOT_HTTP = [
  'ftp://p.example/pb',
  'javascript:alert(1)',
  '/relative/pb',
  'file:///etc/passwd',
  'https:/p.example',
];
const PRIVATE = [
  'http://127.0.0.1/pb?c={click_id}',
  'http://[::1]:8080/pb',
  'http://10.1.2.3/pb',
  'http://169.254.169.254/x',
  'http://[::ffff:0:127.0.0.1]/pb',
  'http://[2002:7f00:1::]/pb',
];

type Sent = { method: string; url: string; body: string };
type Attempt = {
  number: number;
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string;
};
/** The tests' receiver (test/receiver.ts), its requests read as method, raw URL and body text. */
async function startReceiver(
  statusFor: (index: number) => number = () => 200,
  bodyFor: (index: number) => string = (index) => `answer ${index + 1}`,
) {
  const receiver = await Receiver.start((_request, index) => ({
    status: statusFor(index),
    headers: { 'content-type': 'text/plain' },
    body: bodyFor(index),
  }));
  return {
    get requests(): Sent[] {
      return receiver.requests.map((r) => ({ method: r.method, url: r.path, body: r.body.toString('utf8') }));
    },
    base: receiver.origin,
    close: () => receiver.close(),
  };
}
const query = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);

for (const dialect of testedDialects()) {
  describe(`partner postbacks (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      dispatcher = new Dispatcher(env.ctx);
    });
    afterEach(async () => {
      await receiver?.close();
      receiver = undefined;
      await env.ctx.db.transact(async (trx) => {
        await trx.deleteFrom('webhook_attempts').execute();
        await trx.deleteFrom('webhook_deliveries').execute();
      });
    });
    after(async () => {
      await dispatcher.close();
      await env.close();
    });

    async function created(path: string, body: Record<string, unknown>, key?: string) {
      const res = await env.request('POST', path, { body, key });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    }
    const newOffer = async (body: Record<string, unknown> = {}, key?: string): Promise<string> =>
      (
        await created(
          '/api/v1/offers',
          { name: 'O', destinationUrl: 'https://shop.example/', payoutCents: 600, ...body },
          key,
        )
      ).id;
    const newPartner = async (key?: string): Promise<string> =>
      (await created('/api/v1/partners', { name: 'P', email: 'p@example.com' }, key)).id;
    const pair = async () => ({ offerId: await newOffer(), partnerId: await newPartner() });
    const addPostback = (partnerId: string, body: Record<string, unknown>) =>
      env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, { body: { events: EVENTS, ...body } });
    const template = (partnerId: string, body: Record<string, unknown>) =>
      created(`/api/v1/partners/${partnerId}/postbacks`, { events: EVENTS, ...body });
    const convert = (body: Record<string, unknown>) => created('/api/v1/conversions', body);
    const decide = async (id: string, action: 'approve' | 'reject') =>
      assert.equal((await env.request('POST', `/api/v1/conversions/${id}/${action}`)).status, 200);
    const deliveriesOf = (templateId: string) =>
      env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('subscription_id', '=', templateId)
        .orderBy('id')
        .execute();
    /** GET /api/public/webhook-deliveries/:id of the template's only delivery. */
    async function logged(templateId: string) {
      const [row, ...more] = await deliveriesOf(templateId);
      assert.ok(row && more.length === 0, 'one delivery');
      return (await env.request('GET', `/api/public/webhook-deliveries/${row.id}`)).body;
    }
    /** Sends everything due and returns what the receiver got, in arrival order. */
    async function dispatch(): Promise<Sent[]> {
      await dispatcher.runOnce();
      return receiver?.requests ?? [];
    }

    describe('managing templates', () => {
      it('creates a global template with a pbk_ id and answers 201', async () => {
        const partnerId = await newPartner();
        const url = 'https://partner.example/pb?cid={click_id}';
        const res = await addPostback(partnerId, { url, events: ['conversion.approved'] });
        assert.equal(res.status, 201);
        assert.match(res.body.id, /^pbk_[0-9A-Z]{26}$/);
        const createdAt = new Date(env.clock.now()).toISOString();
        assert.deepEqual(res.body, {
          id: res.body.id,
          partnerId,
          offerId: null,
          url,
          events: ['conversion.approved'],
          createdAt,
        });
      });

      it("lists the partner's templates, newest first", async () => {
        const partnerId = await newPartner();
        const first = await template(partnerId, { url: 'https://partner.example/a' });
        env.clock.advance(1_000);
        const second = await template(partnerId, { url: 'https://partner.example/b', offerId: await newOffer() });
        assert.deepEqual((await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`)).body, {
          data: [second, first],
        });
      });

      it('deletes a template with 204, after which it is not listed and deleting it again is 404', async () => {
        const partnerId = await newPartner();
        const path = `/api/v1/partners/${partnerId}/postbacks/${(await template(partnerId, { url: 'https://p.example/' })).id}`;
        assert.equal((await env.request('DELETE', path)).status, 204);
        assert.deepEqual((await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`)).body, { data: [] });
        expectError(await env.request('DELETE', path), 404, 'not_found');
      });

      it('stores exactly 20 templates when 40 are created at once, answering 422 to the other 20', async () => {
        const partnerId = await newPartner();
        const responses = await Promise.all(
          Array.from({ length: 40 }, (_, i) => addPostback(partnerId, { url: `https://p.example/pb/${i}` })),
        );
        const statuses = responses.map((r) => r.status);
        assert.equal(statuses.filter((s) => s === 201).length, 20, JSON.stringify(statuses));
        assert.equal(statuses.filter((s) => s === 422).length, 20, JSON.stringify(statuses));
        const listed = await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`);
        assert.equal(listed.body.data.length, 20);
      });

      it("answers 404 for another brand's partner on list, create and delete", async () => {
        const other = await env.createBrand('Other Brand');
        const theirs = await newPartner(other.apiKey);
        const base = `/api/v1/partners/${theirs}/postbacks`;
        const { id } = await created(base, { url: 'https://p.example/x', events: EVENTS }, other.apiKey);
        expectError(await env.request('GET', base), 404, 'not_found');
        expectError(await addPostback(theirs, { url: 'https://p.example/y' }), 404, 'not_found');
        expectError(await env.request('DELETE', `${base}/${id}`), 404, 'not_found');
      });

      const refusals: Array<[string, 'offerId' | 'events' | 'url', unknown[]]> = [
        ['refuses an unknown offerId with 422', 'offerId', ['off_00000000000000000000000000']],
        ['refuses events other than the three conversion events with 422', 'events', BAD_EVENTS],
        ['refuses a macro in the host, plain or percent-encoded, with 422', 'url', MACRO_HOSTS],
        ['refuses non-http URLs with 422', 'url', NOT_HTTP],
        [
          'refuses a user name or password in the URL with 422',
          'url',
          ['https://u:pw@p.example/', 'https://u@p.example/'],
        ],
      ];
      for (const [name, field, values] of refusals) {
        it(name, async () => {
          const partnerId = await newPartner();
          for (const value of values) {
            const res = await addPostback(partnerId, { url: 'https://p.example/', [field]: value });
            assert.match(expectError(res, 422, 'validation_error').details?.[0]?.path ?? '', new RegExp(`^${field}`));
          }
          assert.deepEqual((await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`)).body, { data: [] });
        });
      }

      it('says what a refused URL must be, not the regular expression it failed', async () => {
        const partnerId = await newPartner();
        for (const url of ['notaurl', 'ftp://p.example/pb', '', 'http://{sub1}.example.com/pb']) {
          const error = expectError(await addPostback(partnerId, { url }), 422, 'validation_error');
          assert.deepEqual(error.details, [
            {
              path: 'url',
              message:
                'must be an absolute http(s) URL without control characters, with macros in the path and query only',
            },
          ]);
        }
      });

      it('refuses a template the parser would dial differently from how it is written (spaces, backslashes, http:///host, dot segments) with 422, keeping its macros as written otherwise', async () => {
        const partnerId = await newPartner();
        for (const url of [
          'https://p.example/pb?x={payout} ',
          'https://p.example/a b?x={payout}',
          'https://p.example\\pb?x={payout}',
          'https:///p.example/pb?x={payout}',
          'https://p.example/{sub1}/../pb?x={payout}',
        ]) {
          const error = expectError(await addPostback(partnerId, { url }), 422, 'validation_error');
          assert.equal(error.details?.[0]?.path, 'url', JSON.stringify(url));
        }
        const url = 'https://p.example/{click_id}/pb?x={payout}&s={sub1}';
        const res = await addPostback(partnerId, { url });
        assert.equal(res.status, 201);
        assert.equal(res.body.url, url);
      });

      it('refuses an http URL that does not parse (a macro in the port, no host) with 422', async () => {
        const partnerId = await newPartner();
        for (const url of ['http://p.example:{sub1}/pb', 'http://', 'http://a b/pb']) {
          expectError(await addPostback(partnerId, { url }), 422, 'validation_error');
        }
      });
    });

    describe('filling the macros', () => {
      it('fills every macro from the conversion and its click, URL-encoding awkward characters', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        await template(partnerId, { url: `${receiver.base}/pb?${ALL_MACROS}` });
        const subs = new URLSearchParams({ sub1: AWKWARD, sub2: 'two', sub5: '5' });
        const click = await env.app.inject({
          url: `/t/${offerId}/${partnerId}?${subs}`,
          headers: BROWSER,
          remoteAddress: '81.2.69.142',
        });
        assert.equal(click.statusCode, 302);
        const clickId = (await env.request('GET', `/api/v1/clicks?offerId=${offerId}`)).body.data[0].id;
        const conversion = await convert({ clickId, externalTxnId: 'ORD 1/2&x' });
        const [sent, ...more] = await dispatch();
        assert.ok(sent && more.length === 0);
        assert.ok(sent.url.includes(`&s1=${encodeURIComponent(AWKWARD)}&`), sent.url);
        assert.deepEqual(query(sent.url), {
          ...{ click: clickId, conv: conversion.id, offer: offerId, partner: partnerId },
          ...{ payout: '6.00', cur: 'USD', status: 'pending', txn: 'ORD 1/2&x' },
          ...{ s1: AWKWARD, s2: 'two', s3: '', s4: '', s5: '5' },
        });
      });

      it('fills {click_id}, {txn_id} and absent subs as empty strings when the conversion has none', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        await template(partnerId, { url: `${receiver.base}/pb?${ALL_MACROS}` });
        await convert({ offerId, partnerId });
        const [sent] = await dispatch();
        assert.match(sent?.url ?? '', /^\/pb\?click=&conv=conv_/);
        const values = query(sent?.url ?? '');
        assert.deepEqual([values.click, values.txn, values.s1, values.s5], ['', '', '', '']);
      });

      it('writes {payout} in major units: 600 US cents as 6.00 and 600 yen as 600', async () => {
        receiver = await startReceiver();
        const partnerId = await newPartner();
        await template(partnerId, { url: `${receiver.base}/pb?offer={offer_id}&payout={payout}&cur={currency}` });
        const [usd, jpy] = [await newOffer({ currency: 'USD' }), await newOffer({ currency: 'JPY' })];
        await convert({ offerId: usd, partnerId });
        await convert({ offerId: jpy, partnerId });
        const sent = new Set((await dispatch()).map((r) => r.url));
        assert.deepEqual(
          sent,
          new Set([`/pb?offer=${jpy}&payout=600&cur=JPY`, `/pb?offer=${usd}&payout=6.00&cur=USD`]),
        );
      });

      it('fills {status} from the event: pending on created, approved on approve, rejected on reject', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb?conv={conversion_id}&status={status}` });
        const [kept, dropped] = [await convert({ offerId, partnerId }), await convert({ offerId, partnerId })];
        await decide(kept.id, 'approve');
        await decide(dropped.id, 'reject');
        assert.deepEqual(
          (await deliveriesOf(id)).map((r) => [r.event, query(r.target_url ?? '').status]),
          [
            ['conversion.created', 'pending'],
            ['conversion.created', 'pending'],
            ['conversion.approved', 'approved'],
            ['conversion.rejected', 'rejected'],
          ],
        );
        const sent = (await dispatch()).map((r) => `${query(r.url).conv}:${query(r.url).status}`).sort();
        assert.deepEqual(
          sent,
          [`${kept.id}:approved`, `${kept.id}:pending`, `${dropped.id}:pending`, `${dropped.id}:rejected`].sort(),
        );
      });

      it('sends the postback as a GET without a body', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        await template(partnerId, { url: `${receiver.base}/pb/{conversion_id}` });
        const conversion = await convert({ offerId, partnerId });
        assert.deepEqual(await dispatch(), [{ method: 'GET', url: `/pb/${conversion.id}`, body: '' }]);
      });
    });

    describe('choosing templates', () => {
      it('uses the per-offer template for its offer and the global template for other offers', async () => {
        receiver = await startReceiver();
        const [special, plain, partnerId] = [await newOffer(), await newOffer(), await newPartner()];
        await template(partnerId, { url: `${receiver.base}/global?offer={offer_id}` });
        await template(partnerId, { url: `${receiver.base}/special?offer={offer_id}`, offerId: special });
        await convert({ offerId: special, partnerId });
        await convert({ offerId: plain, partnerId });
        assert.deepEqual((await dispatch()).map((r) => r.url).sort(), [
          `/global?offer=${plain}`,
          `/special?offer=${special}`,
        ]);
      });

      it('queues sends only for the events a template subscribes to', async () => {
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: 'https://p.example/pb', events: ['conversion.approved'] });
        const [approved, rejected] = [await convert({ offerId, partnerId }), await convert({ offerId, partnerId })];
        assert.equal((await deliveriesOf(id)).length, 0);
        await decide(approved.id, 'approve');
        await decide(rejected.id, 'reject');
        assert.deepEqual(
          (await deliveriesOf(id)).map((r) => r.event),
          ['conversion.approved'],
        );
      });
    });

    describe('queueing with the conversion', () => {
      it('has the postback delivery committed with the conversion and its event when the POST returns, before any dispatch', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb?conv={conversion_id}` });
        const conversion = await convert({ offerId, partnerId });
        const events = await env.ctx.db.read
          .selectFrom('events')
          .select(['id', 'payload'])
          .where('type', '=', 'conversion.created')
          .execute();
        const event = events.find((e) => JSON.parse(e.payload).data.conversionId === conversion.id);
        const [row, ...more] = await deliveriesOf(id);
        assert.ok(row && more.length === 0 && event);
        assert.deepEqual(
          [row.kind, row.event_id, row.status, row.attempt_count],
          ['postback', event.id, 'attempting', 0],
        );
        assert.deepEqual([row.method, row.target_url], ['GET', `${receiver.base}/pb?conv=${conversion.id}`]);
        assert.equal(receiver.requests.length, 0);
      });

      it('queues nothing for a duplicate conversion with the same externalTxnId', async () => {
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: 'https://p.example/pb' });
        const first = await convert({ offerId, partnerId, externalTxnId: 'ORD-DUP' });
        const body = { offerId, partnerId, externalTxnId: 'ORD-DUP' };
        const again = await env.request('POST', '/api/v1/conversions', { body });
        assert.deepEqual([again.status, again.body.id], [200, first.id]);
        assert.equal((await deliveriesOf(id)).length, 1);
      });
    });

    describe('delivery, retries and the log', () => {
      it('retries a 500 after 1 s, 5 s, 30 s, 5 min and 30 min, then fails, logging every attempt', async () => {
        receiver = await startReceiver(() => 500);
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb?conv={conversion_id}` });
        const conversion = await convert({ offerId, partnerId });
        assert.equal(await dispatcher.runOnce(), 1);
        for (const gap of GAPS) {
          env.clock.advance(gap - 1);
          assert.equal(await dispatcher.runOnce(), 0, 'nothing is due before the delay has passed');
          env.clock.advance(1);
          assert.equal(await dispatcher.runOnce(), 1);
        }
        env.clock.advance(24 * 3_600_000);
        assert.equal(await dispatcher.runOnce(), 0, 'a failed delivery is not retried');
        assert.deepEqual(
          new Set(receiver.requests.map((r) => `${r.method} ${r.url}`)),
          new Set([`GET /pb?conv=${conversion.id}`]),
        );
        const log = await logged(id);
        assert.deepEqual(
          [log.kind, log.subscriptionId, log.event, log.status, log.attemptCount, log.nextAttemptAt],
          ['postback', id, 'conversion.created', 'failed', 6, null],
        );
        const attempts: Array<Attempt & { error: string | null }> = log.attempts;
        assert.deepEqual(
          attempts.map((a) => [a.number, a.statusCode, a.responseBody, a.error]),
          [1, 2, 3, 4, 5, 6].map((n) => [n, 500, `answer ${n}`, null]),
        );
        assert.equal(attempts.length, 6);
        assert.ok(attempts.every((a) => Number.isInteger(a.latencyMs) && a.latencyMs >= 0));
        const times = attempts.map((a) => Date.parse(a.attemptedAt));
        assert.deepEqual(
          times.slice(1).map((t, i) => t - (times[i] ?? 0)),
          GAPS,
        );
      });

      it('logs a 500 answer with a NUL byte (bad\\0byte) with U+FFFD and retries it on schedule to failed', async () => {
        receiver = await startReceiver(
          () => 500,
          () => 'bad\0byte',
        );
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb?conv={conversion_id}` });
        await convert({ offerId, partnerId });
        assert.equal(await dispatcher.runOnce(), 1);
        for (const gap of GAPS) {
          env.clock.advance(gap);
          assert.equal(await dispatcher.runOnce(), 1);
        }
        env.clock.advance(24 * 3_600_000);
        assert.equal(await dispatcher.runOnce(), 0, 'a failed delivery is not retried');
        assert.equal(receiver.requests.length, 6);
        const log = await logged(id);
        assert.equal(log.status, 'failed');
        assert.deepEqual(
          log.attempts.map((a: Attempt) => [a.statusCode, a.responseBody]),
          [1, 2, 3, 4, 5, 6].map(() => [500, 'bad\uFFFDbyte']),
        );
      });

      it('stops retrying once the partner answers 2xx', async () => {
        receiver = await startReceiver((index) => (index === 0 ? 503 : 204));
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb` });
        await convert({ offerId, partnerId });
        await dispatcher.runOnce();
        env.clock.advance(1_000);
        await dispatcher.runOnce();
        env.clock.advance(3_600_000);
        assert.equal(await dispatcher.runOnce(), 0);
        const log = await logged(id);
        assert.deepEqual([log.status, log.attemptCount, log.nextAttemptAt], ['succeeded', 2, null]);
        assert.deepEqual(
          log.attempts.map((a: Attempt) => a.statusCode),
          [503, 204],
        );
        assert.equal(receiver.requests.length, 2);
      });

      it('lists only postbacks with ?kind=postback and only webhooks with ?kind=webhook', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        const hook = await created('/api/public/webhooks', {
          url: `${receiver.base}/hook`,
          events: ['conversion.created'],
        });
        try {
          const { id } = await template(partnerId, { url: `${receiver.base}/pb` });
          await convert({ offerId, partnerId });
          assert.deepEqual((await dispatch()).map((r) => `${r.method} ${r.url}`).sort(), ['GET /pb', 'POST /hook']);
          const list = async (search: string) =>
            (await env.request('GET', `/api/public/webhook-deliveries${search}`)).body.data.map(
              (d: { kind: string; subscriptionId: string; status: string }) => [d.kind, d.subscriptionId, d.status],
            );
          assert.equal((await list('')).length, 2);
          assert.deepEqual(await list('?kind=postback'), [['postback', id, 'succeeded']]);
          assert.deepEqual(await list('?kind=webhook'), [['webhook', hook.id, 'succeeded']]);
          expectError(await env.request('GET', '/api/public/webhook-deliveries?kind=email'), 422, 'validation_error');
        } finally {
          assert.equal((await env.request('DELETE', `/api/public/webhooks/${hook.id}`)).status, 204);
        }
      });

      it('refuses to dial a private address at send time when private networks are not allowed', async () => {
        receiver = await startReceiver();
        const { offerId, partnerId } = await pair();
        const { id } = await template(partnerId, { url: `${receiver.base}/pb` });
        await convert({ offerId, partnerId });
        const strict = new Dispatcher(env.ctx, { sender: new Sender(2_000, false) });
        await strict.runOnce();
        await strict.close();
        assert.equal(receiver.requests.length, 0);
        const log = await logged(id);
        assert.deepEqual([log.status, log.attempts[0].statusCode], ['retry_scheduled', null]);
        assert.match(log.attempts[0].error, /non-public address 127\.0\.0\.1/);
      });
    });
  });

  describe(`partner postbacks without private networks (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
    });
    after(() => env.close());

    it('refuses templates pointing at loopback, private or metadata addresses with 422', async () => {
      const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
      const path = `/api/v1/partners/${partner.body.id}/postbacks`;
      for (const url of PRIVATE) {
        const res = await env.request('POST', path, { body: { url, events: ['conversion.created'] } });
        assert.equal(expectError(res, 422, 'validation_error').details?.[0]?.path, 'url', url);
      }
      assert.deepEqual((await env.request('GET', path)).body, { data: [] });
    });
  });
}
