/**
 * PostgreSQL stores conversions on offers without caps in batches, one statement each
 * (conversions/postgresBatch.ts). These tests hold what a batch must keep: every conversion
 * stored with its fact, its event and its deliveries, handed to this process's dispatcher;
 * the duplicate rule across and inside batches; postbacks filled from the batch's rows; and
 * a failing conversion that fails its batch's statement without failing the others, which
 * are then stored one by one.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import { localDay } from '../../src/calendar.js';
import { newId } from '../../src/ids.js';
import { localHour } from '../../src/modules/analytics/localHour.js';
import { conversionBatcher, OFFER_NOW_CAPPED } from '../../src/modules/conversions/postgresBatch.js';
import type { ConversionRow, RecordResult } from '../../src/modules/conversions/repository.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { SystemTestClock } from '../clock.js';
import {
  anotherHandle,
  createTestDatabase,
  createTestEnv,
  describeOrSkip,
  PG_SKIP_REASON,
  PG_URL,
  type TestDatabase,
  type TestEnv,
} from '../helpers.js';
import { Receiver } from '../receiver.js';
import { whileDispatching } from '../webhooks/harness.js';

describeOrSkip('conversion batches (postgres)', { skip: PG_URL ? false : PG_SKIP_REASON }, () => {
  let env: TestEnv;
  let partnerId: string;
  let receiver: Receiver;
  let dispatcher: Dispatcher;
  let stop: AbortController;
  let running: Promise<void>;

  before(async () => {
    env = await createTestEnv('postgres', {
      clock: new SystemTestClock(),
      env: { RATE_LIMIT_PER_MINUTE: '100000' },
    });
    partnerId = (await created('/api/v1/partners', { name: 'P', email: 'p@example.com' })).id;
    receiver = await Receiver.answering(200);
    await created('/api/public/webhooks', { url: receiver.url, events: ['conversion.created'] });
    // The dispatcher loop attaches to the process, so fan-out leases new deliveries to it.
    dispatcher = new Dispatcher(env.ctx);
    stop = new AbortController();
    running = dispatcher.run(stop.signal);
  });
  afterEach(() => {
    receiver.requests.length = 0;
  });
  after(async () => {
    stop.abort();
    await running;
    await receiver.close();
    await env.close();
  });

  async function created(path: string, body: Record<string, unknown>) {
    const res = await env.request('POST', path, { body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  const newOffer = async (): Promise<string> =>
    (await created('/api/v1/offers', { name: 'O', destinationUrl: 'https://shop.example/', revenueCents: 1000 })).id;

  /** The `conversion.created` events that reached the receiver, by conversion id. */
  function deliveredConversions(): string[] {
    return receiver.requests
      .map((r) => JSON.parse(r.body.toString('utf8')) as { event: string; data: { conversionId: string } })
      .filter((envelope) => envelope.event === 'conversion.created')
      .map((envelope) => envelope.data.conversionId);
  }

  /** The stored `conversion.created` events of these conversions. */
  async function eventsOf(conversionIds: string[]): Promise<string[]> {
    const events = await env.ctx.db.read
      .selectFrom('events')
      .select(['id', 'payload'])
      .where('type', '=', 'conversion.created')
      .execute();
    const about = (payload: string) => (JSON.parse(payload) as { data: { conversionId: string } }).data.conversionId;
    return events.filter((e) => conversionIds.includes(about(e.payload))).map((e) => e.id);
  }

  async function deliveriesOf(eventIds: string[]): Promise<number> {
    if (eventIds.length === 0) return 0;
    const rows = await env.ctx.db.read
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', 'in', eventIds)
      .execute();
    return rows.length;
  }

  /** A conversion row of `offerId`, as the service builds it before storing. */
  const row = (offerId: string, id = newId('conv', env.clock.now())): ConversionRow => {
    const now = env.clock.now();
    return {
      id,
      brand_id: env.brand.id,
      offer_id: offerId,
      partner_id: partnerId,
      click_id: null,
      status: 'approved',
      revenue_cents: 1000,
      payout_cents: 0,
      currency: 'USD',
      sub1: null,
      sub2: null,
      sub3: null,
      sub4: null,
      sub5: null,
      external_txn_id: null,
      cap_exceeded: 0,
      cap_periods: null,
      hold_until: null,
      approved_at: now,
      approved_by: null,
      rejected_at: null,
      rejection_reason: null,
      local_day: localDay(now, 'UTC'),
      local_hour: localHour(now, 'UTC'),
      country: null,
      device_type: null,
      os: null,
      browser: null,
      referrer_host: null,
      created_at: now,
      metadata: '{}',
    };
  };

  it('stores every one of many concurrent conversions with its fact, its event and its webhook', async () => {
    const offerId = await newOffer();
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId, externalTxnId: `many-${i}` } }),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      responses.map(() => 201),
    );
    const ids = responses.map((r) => r.body.id as string);
    const listed = await env.request('GET', `/api/v1/conversions?offerId=${offerId}&limit=100`);
    assert.deepEqual(listed.body.data.map((c: { id: string }) => c.id).sort(), [...ids].sort());
    const report = await env.request('GET', `/api/v1/reports?groupBy=offer&offerId=${offerId}`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.totals.conversions, 40);
    assert.equal(report.body.totals.revenueCents, 40 * 1000);
    await receiver.waitForRequests(40, 10_000);
    assert.deepEqual(deliveredConversions().sort(), [...ids].sort());
    assert.equal(await deliveriesOf(await eventsOf(ids)), 40);
  });

  /** Records `conversion` through the batcher, on an offer that has no caps. */
  async function recordBatched(conversion: ConversionRow): Promise<RecordResult> {
    const result = await conversionBatcher(env.ctx).record(conversion);
    assert.ok(result !== OFFER_NOW_CAPPED, 'the offer has no caps');
    return result;
  }

  it('answers a repeated externalTxnId with the conversion stored first, within a batch and across batches', async () => {
    const offerId = await newOffer();
    const body = { offerId, partnerId, externalTxnId: 'twice' };
    const together = await Promise.all([
      env.request('POST', '/api/v1/conversions', { body }),
      env.request('POST', '/api/v1/conversions', { body }),
      env.request('POST', '/api/v1/conversions', { body: { ...body, externalTxnId: 'once' } }),
      env.request('POST', '/api/v1/conversions', { body }),
    ]);
    const twice = [together[0], together[1], together[3]].map((r) => r?.body.id as string);
    assert.deepEqual(together.map((r) => r.status).sort(), [200, 200, 201, 201]);
    assert.equal(new Set(twice).size, 1, 'every answer for the repeated id is the same conversion');
    const later = await env.request('POST', '/api/v1/conversions', { body });
    assert.equal(later.status, 200);
    assert.equal(later.body.id, twice[0]);

    // Recorded in one turn of the event loop: one batch, where the index decides between twins.
    const [first, second] = await Promise.all(
      ['inside', 'inside'].map((txn) => recordBatched({ ...row(offerId), external_txn_id: txn })),
    );
    assert.equal(first?.created, true);
    assert.equal(second?.created, false);
    assert.equal(second?.row.id, first?.row.id);

    const report = await env.request('GET', `/api/v1/reports?groupBy=offer&offerId=${offerId}`);
    assert.equal(report.body.totals.conversions, 3, 'the repeats add nothing to the report');
    const storedIds = [twice[0] as string, together[2]?.body.id as string, first?.row.id as string];
    assert.equal((await eventsOf(storedIds)).length, 3, 'one conversion.created per stored conversion');
    await receiver.waitForRequests(3, 10_000);
    assert.deepEqual(deliveredConversions().sort(), [...storedIds].sort());
  });

  it("fills a partner's postback from a batched conversion's own row", async () => {
    const offerId = await newOffer();
    const postbacks = await Receiver.answering(200);
    try {
      await created(`/api/v1/partners/${partnerId}/postbacks`, {
        url: `${postbacks.origin}/pb?conv={conversion_id}&s2={sub2}&txn={txn_id}`,
        events: ['conversion.created'],
      });
      const responses = await Promise.all(
        ['a', 'b', 'c'].map((sub2) =>
          created('/api/v1/conversions', { offerId, partnerId, externalTxnId: `pb-${sub2}`, sub2 }),
        ),
      );
      await postbacks.waitForRequests(3, 10_000);
      const sent = postbacks.requests.map((r) => Object.fromEntries(new URL(r.path, 'http://x').searchParams)).sort();
      const expected = responses
        .map((c) => ({ conv: c.id as string, s2: c.sub2 as string, txn: c.externalTxnId as string }))
        .sort();
      assert.deepEqual(
        [...sent].sort((x, y) => String(x.conv).localeCompare(String(y.conv))),
        [...expected].sort((x, y) => x.conv.localeCompare(y.conv)),
      );
    } finally {
      await env.ctx.db.transact((trx) =>
        trx.deleteFrom('partner_postbacks').where('partner_id', '=', partnerId).execute(),
      );
      await postbacks.close();
    }
  });

  it('answers only the failing conversion of a failed batch with its error, and stores the others one by one', async () => {
    const offerId = await newOffer();
    const existing = await recordBatched(row(offerId));
    assert.equal(existing.created, true);
    const innocent = row(offerId);
    // A second row with the first one's id: the batch's statement fails, then each of its
    // conversions is stored alone, and only the clashing one fails.
    const outcomes = await Promise.allSettled([recordBatched(row(offerId, existing.row.id)), recordBatched(innocent)]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['rejected', 'fulfilled'],
    );
    const next = await recordBatched(row(offerId));
    assert.equal(next.created, true);

    const listed = await env.request('GET', `/api/v1/conversions?offerId=${offerId}&limit=100`);
    const stored = [existing.row.id, innocent.id, next.row.id].sort();
    assert.deepEqual(listed.body.data.map((c: { id: string }) => c.id).sort(), stored);
    const report = await env.request('GET', `/api/v1/reports?groupBy=offer&offerId=${offerId}`);
    assert.equal(report.body.totals.conversions, 3);
    assert.equal((await eventsOf(stored)).length, 3, 'one conversion.created each, none for the clash');
    await receiver.waitForRequests(3, 10_000);
    assert.deepEqual(deliveredConversions().sort(), stored);
  });
});

describeOrSkip(
  'conversion batches announce their deliveries (postgres)',
  { skip: PG_URL ? false : PG_SKIP_REASON },
  () => {
    let database: TestDatabase;
    let maker: TestEnv;
    let sender: TestEnv;
    before(async () => {
      database = await createTestDatabase('postgres');
      maker = await createTestEnv('postgres', {
        database,
        clock: new SystemTestClock(),
        env: { RATE_LIMIT_PER_MINUTE: '100000' },
      });
      // The second process shares the database and the brand, with its own pool and dispatcher.
      sender = await createTestEnv('postgres', { database: anotherHandle(database), clock: new SystemTestClock() });
    });
    after(async () => {
      await sender.close();
      await sender.ctx.db.close();
      await maker.close();
      await database.drop();
    });

    it("wakes another process's dispatcher with NOTIFY, long before its next poll", async () => {
      const receiver = await Receiver.answering(200);
      try {
        await whileDispatching(sender, 60 * 60_000, async () => {
          const create = async (path: string, body: Record<string, unknown>) => {
            const res = await maker.request('POST', path, { body });
            assert.equal(res.status, 201, JSON.stringify(res.body));
            return res.body.id as string;
          };
          await create('/api/public/webhooks', { url: receiver.url, events: ['conversion.created'] });
          const offerId = await create('/api/v1/offers', { name: 'O', destinationUrl: 'https://shop.example/' });
          const partnerId = await create('/api/v1/partners', { name: 'P', email: 'p@example.com' });
          // The maker runs no dispatcher: its batches leave their deliveries unleased for others.
          const ids = await Promise.all(
            Array.from({ length: 5 }, (_, i) =>
              create('/api/v1/conversions', { offerId, partnerId, externalTxnId: `n${i}` }),
            ),
          );
          await receiver.waitForRequests(5, 10_000);
          const delivered = receiver.requests.map(
            (r) => JSON.parse(r.body.toString('utf8')).data.conversionId as string,
          );
          assert.deepEqual(delivered.sort(), [...ids].sort());
        });
      } finally {
        await receiver.close();
      }
    });
  },
);
