import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { foldFacts } from '../../src/modules/analytics/fold.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { pauseAfter, sweepAll, sweepOnce } from '../../src/modules/retention/sweep.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { clearWebhooks, deliveriesOf, firePartnerApproved, Receiver, subscribe } from '../webhooks/harness.js';

const DAY_MS = 86_400_000;
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';

describe('retention configuration', () => {
  it('keeps deliveries and events 30 days and clicks 90 days unless told otherwise', () => {
    const config = loadConfig({});
    assert.equal(config.retentionDeliveriesMs, 30 * DAY_MS);
    assert.equal(config.retentionEventsMs, 30 * DAY_MS);
    assert.equal(config.retentionClicksMs, 90 * DAY_MS);
    assert.equal(config.retentionBatchSize, 200);
  });

  it('reads windows in days, "off" to keep for ever, and refuses windows under a day', () => {
    const config = loadConfig({ RETENTION_DELIVERIES: '7d', RETENTION_EVENTS: '48h', RETENTION_CLICKS: 'off' });
    assert.equal(config.retentionDeliveriesMs, 7 * DAY_MS);
    assert.equal(config.retentionEventsMs, 2 * DAY_MS);
    assert.equal(config.retentionClicksMs, null);
    assert.throws(() => loadConfig({ RETENTION_CLICKS: '5m' }), ConfigError);
    assert.throws(() => loadConfig({ RETENTION_EVENTS: 'soon' }), /RETENTION_EVENTS/);
    assert.throws(() => loadConfig({ RETENTION_BATCH_SIZE: '0' }), /RETENTION_BATCH_SIZE/);
  });

  it('paces a backlog: at least the minimum pause, and long enough to keep the sweep to its share of the time', () => {
    const pace = { pauseMs: 100, share: 0.05 };
    assert.equal(pauseAfter(2, pace), 100, 'a quick round waits the minimum');
    assert.equal(pauseAfter(20, pace), 380, 'a 20 ms round waits 19 times as long: 5 % of the time sweeping');
    assert.equal(pauseAfter(20, { pauseMs: 0, share: 1 }), 0, 'unpaced (the tests, a manual sweep) does not wait');
  });
});

for (const [index, dialect] of testedDialects().entries()) {
  describe(`retention sweep (${dialect})`, () => {
    let env: TestEnv;
    let dispatcher: Dispatcher;
    const receivers: Receiver[] = [];
    before(async () => {
      env = await createTestEnv(dialect, { env: { WEBHOOK_TIMEOUT: '2s', RETENTION_BATCH_SIZE: '3' } });
      // Ids sort by time and never go back within a process: each suite starts later.
      env.clock.set(Date.UTC(2030 + 2 * index, 0, 1));
      dispatcher = new Dispatcher(env.ctx);
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await clearWebhooks(env);
    });
    after(async () => {
      await dispatcher.close();
      await env.close();
    });

    async function newestEventId(): Promise<string> {
      const res = await env.request('GET', '/api/public/events?event=partner.approved&limit=1');
      return res.body.data[0].id;
    }

    async function offerAndPartner(): Promise<{ offerId: string; partnerId: string }> {
      const offer = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Offer', destinationUrl: 'https://shop.example/', revenueCents: 1000, payoutCents: 400 },
      });
      assert.equal(offer.status, 201, JSON.stringify(offer.body));
      return { offerId: offer.body.id, partnerId: await firePartnerApproved(env) };
    }

    async function click(offerId: string, partnerId: string, ip = '198.51.100.7'): Promise<void> {
      const res = await env.app.inject({
        url: `/t/${offerId}/${partnerId}`,
        headers: { 'user-agent': BROWSER, referer: 'https://blog.example/post?who=me' },
        remoteAddress: ip,
      });
      assert.equal(res.statusCode, 302, res.body);
    }

    async function clickIds(offerId: string): Promise<string[]> {
      const res = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=100`);
      return res.body.data.map((c: { id: string }) => c.id);
    }

    it('deletes finished deliveries, their attempts and their events once older than 30 days, not a millisecond before', async () => {
      const ok = await Receiver.start();
      const failing = await Receiver.start(() => ({ status: 500 }));
      receivers.push(ok, failing);
      await subscribe(env, { url: ok.url });
      await firePartnerApproved(env);
      const oldEvent = await newestEventId();
      await dispatcher.runOnce();
      const [oldDelivery] = (await env.request('GET', '/api/public/webhook-deliveries?limit=1')).body.data;
      assert.equal(oldDelivery.status, 'succeeded');

      env.clock.advance(DAY_MS);
      await firePartnerApproved(env);
      const youngEvent = await newestEventId();

      env.clock.advance(29 * DAY_MS - 1);
      await sweepAll(env.ctx);
      assert.equal((await env.request('GET', `/api/public/events/${oldEvent}`)).status, 200, 'kept at 30 days - 1 ms');
      assert.equal((await env.request('GET', `/api/public/webhook-deliveries/${oldDelivery.id}`)).status, 200);

      env.clock.advance(2);
      const deleted = await sweepAll(env.ctx);
      assert.ok(deleted.deliveries >= 1 && deleted.events >= 1, JSON.stringify(deleted));
      expectError(await env.request('GET', `/api/public/webhook-deliveries/${oldDelivery.id}`), 404, 'not_found');
      expectError(await env.request('GET', `/api/public/events/${oldEvent}`), 404, 'not_found');
      const attempts = await env.ctx.db.read
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .where('delivery_id', '=', oldDelivery.id)
        .execute();
      assert.deepEqual(attempts, []);
      const young = await env.request('GET', `/api/public/events/${youngEvent}`);
      assert.equal(young.status, 200);
      assert.equal(young.body.deliveries.length, 1, 'the young event keeps its delivery');
    });

    it('keeps an unfinished delivery and its event until the delivery is finished', async () => {
      const failing = await Receiver.start(() => ({ status: 500 }));
      receivers.push(failing);
      await subscribe(env, { url: failing.url });
      await firePartnerApproved(env);
      const eventId = await newestEventId();
      await dispatcher.runOnce();
      // A delivery whose retry is still due (as if the schedule were very long).
      await env.ctx.db.transact((trx) =>
        trx
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: env.clock.now() + 60 * DAY_MS })
          .where('event_id', '=', eventId)
          .execute(),
      );
      env.clock.advance(31 * DAY_MS);
      await sweepAll(env.ctx);
      const event = await env.request('GET', `/api/public/events/${eventId}`);
      assert.equal(event.status, 200);
      assert.equal(event.body.deliveries[0].status, 'retry_scheduled');
    });

    it('keeps a parked delivery and its event past every window, and sends it once the subscription is enabled', async () => {
      const receiver = await Receiver.start();
      receivers.push(receiver);
      const sub = await subscribe(env, { url: receiver.url });
      const off = await env.request('PATCH', `/api/public/webhooks/${sub.id}`, { body: { status: 'disabled' } });
      assert.equal(off.status, 200, JSON.stringify(off.body));
      await firePartnerApproved(env);
      const eventId = await newestEventId();
      const [parked] = await deliveriesOf(env, sub.id);
      assert.equal(parked?.status, 'parked');

      env.clock.advance(31 * DAY_MS);
      await sweepAll(env.ctx);
      const kept = await env.request('GET', `/api/public/webhook-deliveries/${parked.id}`);
      assert.equal(kept.status, 200, 'a parked delivery is not finished: retention keeps it');
      assert.equal(kept.body.status, 'parked');
      assert.equal((await env.request('GET', `/api/public/events/${eventId}`)).status, 200, 'and its event');

      const on = await env.request('PATCH', `/api/public/webhooks/${sub.id}`, { body: { status: 'enabled' } });
      assert.equal(on.status, 200, JSON.stringify(on.body));
      await dispatcher.runOnce();
      await receiver.waitForRequests(1);
      const sent = await env.request('GET', `/api/public/webhook-deliveries/${parked.id}`);
      assert.equal(sent.body.status, 'succeeded');
    });

    it('deletes clicks older than 90 days in capped batches without changing any report', async () => {
      const { offerId, partnerId } = await offerAndPartner();
      const firstDay = new Date(env.clock.now()).toISOString().slice(0, 10);
      for (let i = 0; i < 5; i++) await click(offerId, partnerId);
      const [clickId] = await clickIds(offerId);
      const conversion = await env.request('POST', '/api/v1/conversions', { body: { clickId } });
      assert.equal(conversion.status, 201, JSON.stringify(conversion.body));
      await foldFacts(env.ctx);
      env.clock.advance(10 * DAY_MS);
      await click(offerId, partnerId); // left unfolded: reports add it from the facts
      const youngIds = (await clickIds(offerId)).slice(0, 1);
      const lastDay = new Date(env.clock.now() + 100 * DAY_MS).toISOString().slice(0, 10);
      const reportUrl = `/api/v1/reports?from=${firstDay}&to=${lastDay}&groupBy=day,offer,partner`;
      const before = await env.request('GET', reportUrl);
      assert.equal(before.status, 200, JSON.stringify(before.body));
      assert.equal(before.body.totals.clicks, 6);
      assert.equal(before.body.totals.conversions, 1);

      env.clock.advance(80 * DAY_MS + 1);
      const first = await sweepOnce(env.ctx);
      assert.equal(first.clicks, 3, 'one batch deletes RETENTION_BATCH_SIZE clicks at most');
      await sweepAll(env.ctx);
      assert.deepEqual(await clickIds(offerId), youngIds, 'only the click younger than 90 days is left');

      const afterSweep = await env.request('GET', reportUrl);
      assert.deepEqual(afterSweep.body, before.body, 'reports read facts and rollups, never raw clicks');
      const kept = await env.request('GET', `/api/v1/conversions/${conversion.body.id}`);
      assert.equal(kept.status, 200);
      assert.equal(kept.body.clickId, clickId);
    });

    it('erases the IP, user agent and referrer of one click or of every click from an IP, keeping the counts', async () => {
      const { offerId, partnerId } = await offerAndPartner();
      await click(offerId, partnerId, '203.0.113.9');
      await click(offerId, partnerId, '203.0.113.9');
      await click(offerId, partnerId, '192.0.2.44');
      const list = async () =>
        (await env.request('GET', `/api/v1/clicks?offerId=${offerId}`)).body.data as Array<{
          id: string;
          ip: string;
          userAgent: string | null;
          referer: string | null;
        }>;
      const clicks = await list();
      const single = clicks.find((c) => c.ip === '192.0.2.44');
      assert.ok(single);

      const byId = await env.request('POST', '/api/v1/clicks/erase', { body: { clickId: single.id } });
      assert.equal(byId.status, 200, JSON.stringify(byId.body));
      assert.deepEqual(byId.body, { erased: 1 });
      const again = await env.request('POST', '/api/v1/clicks/erase', { body: { clickId: single.id } });
      assert.deepEqual(again.body, { erased: 0 }, 'nothing left to erase');

      const byIp = await env.request('POST', '/api/v1/clicks/erase', { body: { ip: '203.0.113.9' } });
      assert.deepEqual(byIp.body, { erased: 2 });
      const erased = await list();
      assert.equal(erased.length, 3, 'the clicks stay');
      for (const c of erased) {
        assert.equal(c.ip, '');
        assert.equal(c.userAgent, null);
        assert.equal(c.referer, null);
      }
      const stored = await env.ctx.db.read
        .selectFrom('clicks')
        .select(['ip', 'user_agent'])
        .where('offer_id', '=', offerId)
        .execute();
      assert.equal(
        stored.some((r) => r.ip !== '' || r.user_agent !== null),
        false,
      );
    });

    it("forgets an erased IP's clicks in the velocity signal of its next click", async () => {
      const { offerId, partnerId } = await offerAndPartner();
      for (let i = 0; i < 5; i++) await click(offerId, partnerId, '203.0.113.77');
      const byIp = await env.request('POST', '/api/v1/clicks/erase', { body: { ip: '203.0.113.77' } });
      assert.deepEqual(byIp.body, { erased: 5 });
      await click(offerId, partnerId, '203.0.113.77');
      const listed = await env.request('GET', `/api/v1/clicks?offerId=${offerId}`);
      const next = listed.body.data.find((c: { ip: string }) => c.ip === '203.0.113.77');
      assert.deepEqual(next.fraudSignals, [], 'the five erased clicks no longer count');
    });

    it("refuses an erasure without exactly one of clickId or ip, or with a bad IP, and never touches another brand's clicks", async () => {
      const { offerId, partnerId } = await offerAndPartner();
      await click(offerId, partnerId, '198.51.100.200');
      expectError(await env.request('POST', '/api/v1/clicks/erase', { body: {} }), 422, 'validation_error');
      expectError(
        await env.request('POST', '/api/v1/clicks/erase', { body: { clickId: 'clk_x', ip: '198.51.100.200' } }),
        422,
        'validation_error',
      );
      expectError(
        await env.request('POST', '/api/v1/clicks/erase', { body: { ip: 'not-an-ip' } }),
        422,
        'validation_error',
      );
      expectError(await env.request('POST', '/api/v1/clicks/erase', { body: { who: 'x' } }), 422, 'validation_error');
      const other = await env.createBrand('Other');
      const [clickId] = await clickIds(offerId);
      const byId = await env.request('POST', '/api/v1/clicks/erase', { key: other.apiKey, body: { clickId } });
      assert.deepEqual(byId.body, { erased: 0 });
      const byIp = await env.request('POST', '/api/v1/clicks/erase', {
        key: other.apiKey,
        body: { ip: '198.51.100.200' },
      });
      assert.deepEqual(byIp.body, { erased: 0 });
      const still = await env.request('GET', `/api/v1/clicks?offerId=${offerId}`);
      assert.equal(still.body.data[0].ip, '198.51.100.200');
    });
  });
}
