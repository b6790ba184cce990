/**
 * The delivery log list: the last answer (status code, latency, error) on every row,
 * "queued" before the first attempt, filters by status, event type, subscription, partner
 * and date, search by wh_/evt_/conversion id, and "Retry now".
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { startReceiver } from './browser.js';
import { type DashboardClient, signedInClient } from './client.js';

const plain = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
const rowIds = (html: string) => [...html.matchAll(/href="\/dashboard\/deliveries\/(wh_[^"]+)"/g)].map((m) => m[1]);

for (const dialect of testedDialects()) {
  describe(`dashboard delivery log (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const ids: Record<string, string> = {};

    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
      receiver = await startReceiver(() => ({ status: 503, body: 'down for maintenance' }));
      const body = async (url: string, payload: unknown) => (await env.request('POST', url, { body: payload })).body;
      ids.subscription = (await body('/api/public/webhooks', { url: receiver.url, events: ['conversion.created'] })).id;
      ids.offer = (await body('/api/v1/offers', { name: 'O', destinationUrl: 'https://x.example/' })).id;
      ids.partner = (await body('/api/v1/partners', { name: 'P', email: 'p@example.com' })).id;
      await body(`/api/v1/partners/${ids.partner}/postbacks`, { url: receiver.url, events: ['conversion.created'] });
      ids.tried = (await body('/api/v1/conversions', { offerId: ids.offer, partnerId: ids.partner })).id;
      const dispatcher = new Dispatcher(env.ctx);
      await dispatcher.runOnce();
      await dispatcher.close();
      ids.queued = (await body('/api/v1/conversions', { offerId: ids.offer, partnerId: ids.partner })).id;
      const rows = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select(['id', 'kind', 'event_id', 'attempt_count'])
        .execute();
      const webhook = rows.find((r) => r.kind === 'webhook' && r.attempt_count === 1);
      assert.ok(webhook, 'the first webhook delivery was tried');
      ids.delivery = webhook.id;
      ids.event = webhook.event_id;
    });
    after(async () => {
      await receiver.close();
      await env.close();
    });

    it('refuses a day the calendar lacks or a reversed range with 422, the problem beside its field', async () => {
      const impossible = await client.get('/dashboard/deliveries?from=2026-02-30');
      assert.equal(impossible.status, 422);
      assert.match(impossible.body, /id="from" name="from" type="date" value="2026-02-30" aria-invalid="true"/);
      assert.match(impossible.body, /<p class="field-error" id="from-error">is not a calendar date<\/p>/);
      assert.match(impossible.body, /role="alert" id="error-summary"/);
      assert.doesNotMatch(impossible.body, /\/dashboard\/deliveries\/wh_/, 'no list for a refused day');
      const reversed = await client.get('/dashboard/deliveries?from=2026-11-21&to=2026-11-01');
      assert.equal(reversed.status, 422);
      assert.match(reversed.body, /id="from-error">must not be after to</);
      const fine = await client.get('/dashboard/deliveries?from=2026-11-01&to=2026-11-30');
      assert.equal(fine.status, 200);
    });

    it('shows the last status code, latency and answer per row, and "queued" before any attempt', async () => {
      const page = await client.get('/dashboard/deliveries');
      assert.equal(page.status, 200);
      const text = plain(page.body);
      assert.match(text, /503 · \d+ ms/);
      assert.match(text, /queued/);
      assert.match(text, /not tried yet/);
      assert.equal(rowIds(page.body).length, 4);
    });

    it("shows each attempt's request (method, URL, headers with the signature) and the response headers", async () => {
      const page = await client.get(`/dashboard/deliveries/${ids.delivery}`);
      assert.equal(page.status, 200);
      const text = plain(page.body);
      assert.match(text, /Request and response headers/);
      assert.ok(text.includes(`POST ${receiver.url}`), 'the URL the attempt went to');
      assert.ok(text.includes(`x-service-webhook-id: ${ids.delivery}`), 'the headers sent');
      assert.match(text, /content-type: /, 'the response headers');
    });

    it('sends a test event from a subscription page and opens it in the log, marked as a test', async () => {
      const form = await client.get(`/dashboard/webhooks/${ids.subscription}`);
      assert.match(form.body, /Send a test event/);
      const before = receiver.received.length;
      const res = await client.post(`/dashboard/webhooks/${ids.subscription}/test`, { event: 'partner.banned' });
      assert.equal(res.status, 303);
      assert.match(res.location ?? '', /^\/dashboard\/deliveries\/wh_/);
      assert.equal(receiver.received.length, before + 1);
      const page = await client.get(res.location as string);
      const text = plain(page.body);
      assert.match(text, /Test partner\.banned sent: 503/);
      assert.match(text, /test send/);
      assert.doesNotMatch(page.body, /\/redeliver"/, 'no Redeliver for a test send, which is never sent again');
      assert.match(text, /A test send is never sent again/);
      const refused = await client.post(`/dashboard/webhooks/${ids.subscription}/test`, { event: 'nope' });
      assert.match(plain((await client.get(refused.location as string)).body), /Choose an event from the list/);
      // The other tests count this suite's deliveries: the test send leaves none behind.
      const id = (res.location as string).split('/').at(-1) as string;
      await env.ctx.db.transact(async (trx) => {
        const row = await trx
          .selectFrom('webhook_deliveries')
          .select('event_id')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        await trx.deleteFrom('webhook_attempts').where('delivery_id', '=', id).execute();
        await trx.deleteFrom('webhook_deliveries').where('id', '=', id).execute();
        await trx.deleteFrom('events').where('id', '=', row.event_id).execute();
      });
    });

    it('filters by status, event type, subscription, partner and date', async () => {
      const retrying = await client.get('/dashboard/deliveries?status=retry_scheduled');
      assert.equal(rowIds(retrying.body).length, 2);
      const approvals = await client.get('/dashboard/deliveries?event=conversion.approved');
      assert.equal(rowIds(approvals.body).length, 0);
      const created = await client.get('/dashboard/deliveries?event=conversion.created');
      assert.equal(rowIds(created.body).length, 4);
      const sub = await client.get(`/dashboard/deliveries?subscription=${ids.subscription}`);
      assert.equal(rowIds(sub.body).length, 2);
      const partner = await client.get(`/dashboard/deliveries?partnerId=${ids.partner}`);
      assert.equal(rowIds(partner.body).length, 2);
      assert.match(plain(partner.body), /postback/);
      const today = new Date(env.clock.now()).toISOString().slice(0, 10);
      const inRange = await client.get(`/dashboard/deliveries?from=${today}&to=${today}`);
      assert.equal(rowIds(inRange.body).length, 4);
      const later = await client.get('/dashboard/deliveries?from=2099-01-01');
      assert.equal(rowIds(later.body).length, 0);
    });

    it('finds deliveries by wh_, evt_ and conversion id', async () => {
      assert.deepEqual(rowIds((await client.get(`/dashboard/deliveries?q=${ids.delivery}`)).body), [ids.delivery]);
      const byEvent = rowIds((await client.get(`/dashboard/deliveries?q=${ids.event}`)).body);
      assert.equal(byEvent.length, 2, 'the webhook and the postback of that event');
      assert.ok(byEvent.includes(ids.delivery));
      const byConversion = rowIds((await client.get(`/dashboard/deliveries?q=${ids.tried}`)).body);
      assert.deepEqual(byConversion.sort(), byEvent.sort());
      assert.equal(rowIds((await client.get('/dashboard/deliveries?q=conv_nope')).body).length, 0);
    });

    it('brings a retrying delivery forward with "Retry now", and refuses one that is not retrying', async () => {
      env.clock.advance(1000);
      const res = await client.post(`/dashboard/deliveries/${ids.delivery}/retry`, { back: '/dashboard/deliveries' });
      assert.equal(res.status, 303);
      const row = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('next_attempt_at')
        .where('id', '=', ids.delivery!)
        .executeTakeFirstOrThrow();
      assert.equal(Number(row.next_attempt_at), env.clock.now());
      const queued = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('attempt_count', '=', 0)
        .executeTakeFirstOrThrow();
      const refused = await client.post(`/dashboard/deliveries/${queued.id}/retry`);
      const page = await client.get(refused.location!);
      assert.match(page.body, /Only a delivery waiting for its next retry can be retried now\./);
      assert.equal((await client.post('/dashboard/deliveries/wh_nope/retry')).status, 404);
    });
  });
}
