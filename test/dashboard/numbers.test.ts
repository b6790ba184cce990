/**
 * The numbers where decisions are made: 30-day clicks, conversions, revenue, payout and EPC
 * on offer and partner lists and pages (from the rollups), totals and a CSV of the filtered
 * conversions, and the clicks page with fraud signals in words and sub-ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

/** The text of a page with tags removed and whitespace collapsed. */
const plain = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

for (const dialect of testedDialects()) {
  describe(`dashboard numbers (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    const ids: Record<string, string> = {};

    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
      const make = async (url: string, body: unknown) => (await env.request('POST', url, { body })).body.id as string;
      ids.offer = await make('/api/v1/offers', {
        name: 'Counted',
        destinationUrl: 'https://x.example/',
        revenueCents: 4000,
        payoutCents: 1000,
      });
      ids.quiet = await make('/api/v1/offers', { name: 'Quiet', destinationUrl: 'https://x.example/' });
      ids.partner = await make('/api/v1/partners', { name: 'Counter', email: 'c@example.com' });
      ids.other = await make('/api/v1/partners', { name: 'Elsewhere', email: 'e@example.com' });
      for (const ua of ['Mozilla/5.0 Chrome/120', 'Mozilla/5.0 Chrome/121', 'Mozilla/5.0 Chrome/122', 'curl/8.0']) {
        await env.app.inject({
          method: 'GET',
          url: `/t/${ids.offer}/${ids.partner}?sub1=spring&sub3=banner`,
          headers: { 'user-agent': ua },
        });
      }
      for (const txn of ['a', 'b']) {
        await env.request('POST', '/api/v1/conversions', {
          body: { offerId: ids.offer, partnerId: ids.partner, externalTxnId: txn },
        });
      }
      await env.request('POST', '/api/v1/conversions', {
        body: { offerId: ids.offer, partnerId: ids.other, externalTxnId: 'c', revenueCents: 500, payoutCents: 100 },
      });
    });
    after(() => env.close());

    it('shows 30-day clicks, conversions, revenue, payout and EPC on the offers list and offer page', async () => {
      const list = plain((await client.get('/dashboard/offers')).body);
      // 4 clicks; 3 conversions; $40 + $40 + $5 revenue; $10 + $10 + $1 payout; EPC $21 / 4 clicks.
      assert.match(list, /Counted off_\w+ active 4 3 \$85\.00 \$21\.00 \$5\.25/);
      assert.match(list, /Quiet off_\w+ active 0 0 \$0\.00 \$0\.00 \$0\.00/);
      const page = plain((await client.get(`/dashboard/offers/${ids.offer}`)).body);
      assert.match(page, /Clicks 4 Conversions 3 Revenue \$85\.00 Payout \$21\.00 EPC \$5\.25/);
    });

    it('shows the same numbers per partner on the partners list and partner page', async () => {
      const list = plain((await client.get('/dashboard/partners')).body);
      assert.match(list, /Counter c@example\.com active 4 2 \$80\.00 \$20\.00 \$5\.00/);
      assert.match(list, /Elsewhere e@example\.com active 0 1 \$5\.00 \$1\.00 \$0\.00/);
      const page = plain((await client.get(`/dashboard/partners/${ids.partner}`)).body);
      assert.match(page, /Clicks 4 Conversions 2 Revenue \$80\.00 Payout \$20\.00 EPC \$5\.00/);
    });

    it('totals the filtered conversions and exports exactly them as CSV', async () => {
      const all = plain((await client.get('/dashboard/conversions')).body);
      assert.match(all, /3 conversions · revenue \$85\.00 · payout \$21\.00/);
      const filtered = plain((await client.get(`/dashboard/conversions?partnerId=${ids.other}`)).body);
      assert.match(filtered, /1 conversion · revenue \$5\.00 · payout \$1\.00/);
      const csv = await client.get(`/dashboard/conversions/export.csv?partnerId=${ids.partner}`);
      assert.equal(csv.status, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const lines = csv.body.trim().split('\r\n');
      assert.equal(
        lines[0],
        'id,created_at,status,offer_id,offer_name,partner_id,partner_name,revenue,payout,currency,external_txn_id,click_id,sub1,sub2,sub3,sub4,sub5',
      );
      assert.equal(lines.length, 3);
      assert.deepEqual(
        lines
          .slice(1)
          .map((l) => l.split(',')[10])
          .sort(),
        ['a', 'b'],
      );
      assert.match(lines[1]!, new RegExp(`,pending,${ids.offer},Counted,${ids.partner},Counter,40\\.00,10\\.00,USD,`));
    });

    it('lists clicks with fraud signals in words and sub-ids, each linked to its page', async () => {
      const list = await client.get('/dashboard/clicks');
      assert.equal(list.status, 200);
      const text = plain(list.body);
      assert.match(text, /bot user agent/);
      assert.doesNotMatch(text, /bot_user_agent/);
      assert.match(text, /sub1=spring sub3=banner/);
      const id = /href="\/dashboard\/clicks\/(clk_[^"]+)"/.exec(list.body)?.[1];
      assert.ok(id, 'a click links to its page');
      const page = await client.get(`/dashboard/clicks/${id}`);
      assert.equal(page.status, 200);
      assert.match(plain(page.body), /Sub ids sub1=spring sub3=banner/);
    });

    it("answers 404 for another brand's click", async () => {
      const other = await env.createBrand('Other');
      const offer = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'T', destinationUrl: 'https://x.example/' },
          key: other.apiKey,
        })
      ).body.id;
      const partner = (
        await env.request('POST', '/api/v1/partners', { body: { name: 'T', email: 't@x.example' }, key: other.apiKey })
      ).body.id;
      await env.app.inject({ method: 'GET', url: `/t/${offer}/${partner}` });
      const theirs = (await env.request('GET', '/api/v1/clicks', { key: other.apiKey })).body.data[0].id;
      assert.equal((await client.get(`/dashboard/clicks/${theirs}`)).status, 404);
    });
  });

  describe(`dashboard numbers in several currencies (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    const ids: Record<string, string> = {};

    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
      const make = async (url: string, body: unknown) => (await env.request('POST', url, { body })).body.id as string;
      ids.offer = await make('/api/v1/offers', {
        name: 'Euro',
        destinationUrl: 'https://x.example/',
        currency: 'EUR',
        revenueCents: 2000,
        payoutCents: 500,
      });
      ids.partner = await make('/api/v1/partners', { name: 'Mixed', email: 'm@example.com' });
      await env.app.inject({
        method: 'GET',
        url: `/t/${ids.offer}/${ids.partner}`,
        headers: { 'user-agent': 'Mozilla/5.0 Chrome/120' },
      });
      for (const txn of ['a', 'b']) {
        await env.request('POST', '/api/v1/conversions', {
          body: { offerId: ids.offer, partnerId: ids.partner, externalTxnId: txn },
        });
      }
      const usd = await env.request('POST', '/api/v1/conversions', {
        body: {
          offerId: ids.offer,
          partnerId: ids.partner,
          externalTxnId: 'c',
          currency: 'USD',
          revenueCents: 700,
          payoutCents: 300,
        },
      });
      assert.equal(usd.status, 201, JSON.stringify(usd.body));
    });
    after(() => env.close());

    it("shows an offer's caps with their counts now, and says where traffic goes once one is reached", async () => {
      const make = async (url: string, body: unknown) => (await env.request('POST', url, { body })).body.id as string;
      const offerId = await make('/api/v1/offers', {
        name: 'Capped',
        destinationUrl: 'https://x.example/',
        fallbackUrl: 'https://x.example/sold-out',
        caps: { daily: 1, global: 10 },
      });
      const partnerId = await make('/api/v1/partners', { name: 'Capper', email: 'cap@example.com' });
      const open = plain((await client.get(`/dashboard/offers/${offerId}`)).body);
      assert.match(open, /Caps now Today: 0 of 1 In all: 0 of 10/);
      assert.doesNotMatch(open, /A cap is reached/);
      await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      const reached = plain((await client.get(`/dashboard/offers/${offerId}`)).body);
      assert.match(reached, /Today: 1 of 1 — reached In all: 1 of 10/);
      assert.match(reached, /A cap is reached: tracking links send visitors to the fallback URL/);
    });

    it('shows money of each currency apart on the offer and partner lists and pages, never summed', async () => {
      // EUR: 1 click, €40 revenue, €10 payout, EPC €10; USD: no click, $7 and $3.
      const row = /1 3 €40\.00 · \$7\.00 €10\.00 · \$3\.00 €10\.00 · \$0\.00/;
      assert.match(plain((await client.get('/dashboard/offers')).body), row);
      assert.match(plain((await client.get('/dashboard/partners')).body), row);
      const cards = /Clicks 1 Conversions 3 Revenue €40\.00 · \$7\.00 Payout €10\.00 · \$3\.00 EPC €10\.00 · \$0\.00/;
      assert.match(plain((await client.get(`/dashboard/offers/${ids.offer}`)).body), cards);
      assert.match(plain((await client.get(`/dashboard/partners/${ids.partner}`)).body), cards);
    });
  });
}
