/**
 * PostgreSQL stores ordinary clicks in batches, one statement each (clicks/postgresBatch.ts).
 * These tests hold what a batch must keep: every click stored with its fact, the velocity
 * signal counted across clicks of the same batch, and a failure that belongs to the whole
 * batch answered to each of its clicks without harming the next.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { localDay } from '../../src/calendar.js';
import { newId } from '../../src/ids.js';
import { clickFact } from '../../src/modules/analytics/facts.js';
import { localHour } from '../../src/modules/analytics/localHour.js';
import { clickBatcher } from '../../src/modules/clicks/postgresBatch.js';
import type { ClickRow } from '../../src/modules/clicks/repository.js';
import { VELOCITY_WINDOW_MS } from '../../src/modules/fraud/scoring.js';
import { createTestEnv, describeOrSkip, PG_SKIP_REASON, PG_URL, type TestEnv } from '../helpers.js';

const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
const WITH_VELOCITY = { fraud_score: 30, fraud_signals: JSON.stringify(['click_velocity']) };

describeOrSkip('click batches (postgres)', { skip: PG_URL ? false : PG_SKIP_REASON }, () => {
  let env: TestEnv;
  let partnerId: string;
  before(async () => {
    env = await createTestEnv('postgres', { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
    assert.equal(partner.status, 201, JSON.stringify(partner.body));
    partnerId = partner.body.id;
  });
  after(() => env.close());

  async function newOffer(): Promise<string> {
    const res = await env.request('POST', '/api/v1/offers', {
      body: { name: 'Offer', destinationUrl: 'https://shop.example/?cid={click_id}', currency: 'EUR' },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id;
  }

  /** A click row of `offerId` from `ip`, as the tracking link builds it before storing. */
  function clickRow(offerId: string, ip: string, id = newId('clk', env.clock.now())): ClickRow {
    return {
      id,
      brand_id: env.brand.id,
      offer_id: offerId,
      partner_id: partnerId,
      ip,
      user_agent: BROWSER_UA,
      referer: null,
      sub1: 'batch',
      sub2: null,
      sub3: null,
      sub4: null,
      sub5: null,
      fraud_score: 0,
      fraud_signals: '[]',
      high_risk: 0,
      country: 'GB',
      device_type: 'desktop',
      os: 'Linux',
      browser: 'Chrome',
      referrer_host: null,
      created_at: env.clock.now(),
    };
  }

  function store(row: ClickRow) {
    const now = env.clock.now();
    const fact = clickFact(row, { day: localDay(now, 'UTC'), hour: localHour(now, 'UTC'), currency: 'EUR' });
    return clickBatcher(env.ctx.db).store(row, WITH_VELOCITY, fact, now - VELOCITY_WINDOW_MS);
  }

  it('stores every one of many concurrent clicks with its report fact', async () => {
    const offerId = await newOffer();
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        env.app.inject({
          url: `/t/${offerId}/${partnerId}?sub1=s${i}`,
          headers: { 'user-agent': BROWSER_UA },
          remoteAddress: `81.2.69.${i + 1}`,
        }),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.statusCode),
      responses.map(() => 302),
    );
    const ids = responses.map((r) => new URL(String(r.headers.location)).searchParams.get('cid'));
    const listed = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=100`);
    assert.deepEqual(listed.body.data.map((c: { id: string }) => c.id).sort(), [...ids].sort());
    const report = await env.request('GET', `/api/v1/reports?groupBy=offer&offerId=${offerId}`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.totals.clicks, 40);
  });

  it('counts the clicks ahead of a click in the same batch towards its velocity signal', async () => {
    const offerId = await newOffer();
    // Stored in one turn of the event loop: one batch.
    const stored = await Promise.all(Array.from({ length: 7 }, () => store(clickRow(offerId, '81.2.70.1'))));
    assert.deepEqual(
      stored.map((s) => s.fraud_score),
      [0, 0, 0, 0, 0, 30, 30],
    );
    assert.deepEqual(stored[6]?.fraud_signals, WITH_VELOCITY.fraud_signals);
    const listed = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=100`);
    assert.deepEqual(listed.body.data.map((c: { fraudScore: number }) => c.fraudScore).sort(), [0, 0, 0, 0, 0, 30, 30]);
    // Clicks stored earlier count too: the next click of that IP is the eighth.
    assert.equal((await store(clickRow(offerId, '81.2.70.1'))).fraud_score, 30);
    assert.equal((await store(clickRow(offerId, '81.2.70.2'))).fraud_score, 0, 'another IP is not counted');
  });

  it('keeps the clicks of one batch apart by their attributes in reports', async () => {
    const offerId = await newOffer();
    const withSub = (sub1: string | null, i: number) => ({ ...clickRow(offerId, `81.2.72.${i}`), sub1 });
    const subs = ['a', 'a', 'b', null, 'a', 'b'];
    await Promise.all(subs.map((sub1, i) => store(withSub(sub1, i + 1))));
    const report = await env.request('GET', `/api/v1/reports?groupBy=sub1&offerId=${offerId}`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const bySub = Object.fromEntries(
      report.body.data.map((row: { sub1: string | null; clicks: number }) => [String(row.sub1), row.clicks]),
    );
    assert.deepEqual(bySub, { a: 3, b: 2, null: 1 });
  });

  it('answers each click of a failed batch with its error, stores none of them, and goes on', async () => {
    const offerId = await newOffer();
    const existing = clickRow(offerId, '81.2.71.1');
    await store(existing);
    const innocent = clickRow(offerId, '81.2.71.2');
    const outcomes = await Promise.allSettled([store(clickRow(offerId, '81.2.71.3', existing.id)), store(innocent)]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['rejected', 'rejected'],
    );
    const after = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=100`);
    assert.deepEqual(
      after.body.data.map((c: { id: string }) => c.id),
      [existing.id],
    );
    const next = clickRow(offerId, '81.2.71.4');
    assert.equal((await store(next)).fraud_score, 0);
    const report = await env.request('GET', `/api/v1/reports?groupBy=offer&offerId=${offerId}`);
    assert.equal(report.body.totals.clicks, 2);
  });
});
