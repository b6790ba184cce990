import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Click } from '../../src/modules/clicks/schemas.js';
import { SENDER_USER_AGENT } from '../../src/modules/deliveries/userAgent.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const BROWSER_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const HOME_IP = '81.2.69.142'; // a residential address: no datacenter signal
const AWS_IP = '3.5.140.1';
const ALL_MACROS =
  'https://shop.example/land?cid={click_id}&pid={partner_id}&oid={offer_id}&s1={sub1}&s2={sub2}&s3={sub3}&s4={sub4}&s5={sub5}';
const NO_LIMIT = { RATE_LIMIT_PER_MINUTE: '100000' };

async function newOffer(env: TestEnv, body: Record<string, unknown> = {}, key?: string): Promise<string> {
  const res = await env.request('POST', '/api/v1/offers', {
    body: { name: 'Offer', destinationUrl: ALL_MACROS, ...body },
    key,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function newPartner(env: TestEnv, key?: string): Promise<string> {
  const res = await env.request('POST', '/api/v1/partners', { body: { name: 'Partner', email: 'p@example.com' }, key });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** An offer whose destination the API would refuse today, as one saved before the rule was. */
async function savedBeforeTheRules(env: TestEnv, destinationUrl: string): Promise<string> {
  const offerId = await newOffer(env, { destinationUrl: 'https://shop.example/a' });
  await env.ctx.db.transact((trx) =>
    trx.updateTable('offers').set({ destination_url: destinationUrl }).where('id', '=', offerId).execute(),
  );
  return offerId;
}

function visit(env: TestEnv, path: string, headers: Record<string, string> = {}, remoteAddress = HOME_IP) {
  return env.app.inject({ method: 'GET', url: path, headers: { 'user-agent': BROWSER_UA, ...headers }, remoteAddress });
}

async function clicksOf(env: TestEnv, query: string, key?: string) {
  const res = await env.request('GET', `/api/v1/clicks?${query}`, { key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { data: Click[]; nextCursor: string | null };
}

/** Every click of the brand (this file makes far fewer than the page maximum of 100). */
const clickCount = async (env: TestEnv) => (await clicksOf(env, 'limit=100')).data.length;

for (const dialect of testedDialects()) {
  describe(`GET /t/:offerId/:partnerId (${dialect})`, () => {
    let env: TestEnv;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: NO_LIMIT });
      partnerId = await newPartner(env);
    });
    after(() => env.close());

    describe('the redirect', () => {
      it('answers 302 to the destination URL with every macro filled in', async () => {
        const offerId = await newOffer(env);
        const res = await visit(env, `/t/${offerId}/${partnerId}?sub1=a&sub2=b&sub3=c&sub4=d&sub5=e`);
        assert.equal(res.statusCode, 302);
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.equal(
          res.headers.location,
          `https://shop.example/land?cid=${click?.id}&pid=${partnerId}&oid=${offerId}&s1=a&s2=b&s3=c&s4=d&s5=e`,
        );
      });

      it('URL-encodes awkward sub values so each arrives intact in its own parameter', async () => {
        const offerId = await newOffer(env);
        const subs = ['two words', 'a&b=c', '/path?q=1#frag', 'café', '🎉 party'];
        const query = subs.map((value, i) => `sub${i + 1}=${encodeURIComponent(value)}`).join('&');
        const res = await visit(env, `/t/${offerId}/${partnerId}?${query}`);
        assert.equal(res.statusCode, 302);
        const location = String(res.headers.location);
        for (const value of subs) assert.ok(location.includes(encodeURIComponent(value)), `${value} in ${location}`);
        const { searchParams, hash } = new URL(location);
        const received = [1, 2, 3, 4, 5].map((n) => searchParams.get(`s${n}`));
        assert.deepEqual(received, subs);
        assert.equal(hash, '');
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.deepEqual([click?.sub1, click?.sub2, click?.sub3, click?.sub4, click?.sub5], subs);
      });

      it('percent-encodes what a Location header cannot carry: an internationalised path, a control character saved before they were refused', async () => {
        const offerId = await newOffer(env, {
          destinationUrl: 'https://shop.example/日本/landing?c={click_id}&s={sub1}',
        });
        const res = await visit(env, `/t/${offerId}/${partnerId}?sub1=${encodeURIComponent('ü')}`);
        assert.equal(res.statusCode, 302);
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.equal(res.headers.location, `https://shop.example/%E6%97%A5%E6%9C%AC/landing?c=${click?.id}&s=%C3%BC`);

        const legacy = await savedBeforeTheRules(env, 'https://shop.example/a\r\nSet-Cookie: x=1');
        const old = await visit(env, `/t/${legacy}/${partnerId}`);
        assert.equal(old.statusCode, 302);
        assert.equal(old.headers.location, 'https://shop.example/a%0D%0ASet-Cookie:%20x=1');
        assert.equal(old.headers['set-cookie'], undefined);
      });

      it('never fills a macro in the host of an offer saved before they were refused (no open redirect)', async () => {
        const legacy = await savedBeforeTheRules(env, 'https://{sub1}/landing?s={sub1}');
        const res = await visit(env, `/t/${legacy}/${partnerId}?sub1=evil.example`);
        assert.equal(res.statusCode, 302);
        assert.equal(res.headers.location, 'https://{sub1}/landing?s=evil.example');
      });

      it('fills the macros of missing subs with the empty string', async () => {
        const offerId = await newOffer(env);
        const res = await visit(env, `/t/${offerId}/${partnerId}?sub2=only`);
        const location = String(res.headers.location);
        assert.match(location, /&s1=&s2=only&s3=&s4=&s5=$/);
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.deepEqual([click?.sub1, click?.sub2, click?.sub3], [null, 'only', null]);
      });

      it('ignores query parameters it does not know', async () => {
        const offerId = await newOffer(env, { destinationUrl: 'https://shop.example/?s1={sub1}' });
        const res = await visit(env, `/t/${offerId}/${partnerId}?utm_source=news&sub1=x&gclid=abc`);
        assert.equal(res.statusCode, 302);
        assert.equal(res.headers.location, 'https://shop.example/?s1=x');
      });
    });

    describe("the service's own sender", () => {
      it('is redirected like any visitor but stores no click: a postback pointed at the link under another name of this host', async () => {
        const offerId = await newOffer(env);
        const before = await clickCount(env);
        for (const userAgent of [SENDER_USER_AGENT, 'Affitrack-Webhooks/2.0']) {
          const res = await visit(env, `/t/${offerId}/${partnerId}?sub1=pad`, { 'user-agent': userAgent });
          assert.equal(res.statusCode, 302, userAgent);
          assert.equal(
            res.headers.location,
            `https://shop.example/land?cid=&pid=${partnerId}&oid=${offerId}&s1=pad&s2=&s3=&s4=&s5=`,
            userAgent,
          );
        }
        assert.equal(await clickCount(env), before, 'no click stored');
        const browser = await visit(env, `/t/${offerId}/${partnerId}?sub1=real`);
        assert.equal(browser.statusCode, 302);
        assert.equal(await clickCount(env), before + 1, 'control: a browser is recorded');
      });
    });

    describe('the stored click', () => {
      it('is listed by GET /api/v1/clicks as soon as the redirect is answered, with every field', async () => {
        const offerId = await newOffer(env);
        const res = await visit(env, `/t/${offerId}/${partnerId}?sub1=s1&sub3=s3`, {
          referer: 'https://blog.example/post',
        });
        assert.equal(res.statusCode, 302);
        const clickId = new URL(String(res.headers.location)).searchParams.get('cid');
        const { data } = await clicksOf(env, `offerId=${offerId}`);
        assert.deepEqual(data, [
          {
            id: clickId,
            offerId,
            partnerId,
            ip: HOME_IP,
            userAgent: BROWSER_UA,
            referer: 'https://blog.example/post',
            sub1: 's1',
            sub2: null,
            sub3: 's3',
            sub4: null,
            sub5: null,
            fraudScore: 0,
            fraudSignals: [],
            highRisk: false,
            country: 'GB',
            deviceType: 'desktop',
            os: 'Windows',
            browser: 'Chrome',
            referrerHost: 'blog.example',
            createdAt: new Date(env.clock.now()).toISOString(),
          },
        ]);
        assert.match(String(clickId), /^clk_[0-9A-Z]{26}$/);
      });

      it('redirects and stores the click when a sub contains a NUL byte', async () => {
        const offerId = await newOffer(env);
        assert.equal((await visit(env, `/t/${offerId}/${partnerId}?sub1=a%00b`)).statusCode, 302);
        assert.equal((await clicksOf(env, `offerId=${offerId}`)).data.length, 1);
      });

      it('keeps the socket address as the client IP even when X-Forwarded-For is sent', async () => {
        const offerId = await newOffer(env);
        await visit(env, `/t/${offerId}/${partnerId}`, { 'x-forwarded-for': AWS_IP });
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.equal(click?.ip, HOME_IP);
        assert.deepEqual(click?.fraudSignals, []);
      });

      it('stores an IPv6 client address as it connected, and an IPv4-mapped one as plain IPv4', async () => {
        const offerId = await newOffer(env);
        await visit(env, `/t/${offerId}/${partnerId}`, {}, '2001:db8::1');
        await visit(env, `/t/${offerId}/${partnerId}`, {}, `::ffff:${HOME_IP}`);
        const { data } = await clicksOf(env, `offerId=${offerId}`);
        assert.deepEqual(
          data.map((c) => c.ip),
          [HOME_IP, '2001:db8::1'],
        );
      });
    });

    describe('links that are not active', () => {
      async function assertDeadLink(path: string) {
        const before = await clickCount(env);
        const res = await visit(env, path);
        assert.equal(res.statusCode, 404);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.match(res.body, /<html/);
        assert.equal(res.headers.location, undefined);
        assert.equal(await clickCount(env), before, 'no click is stored');
      }
      const setStatus = async (offerId: string, status: string) =>
        assert.equal((await env.request('PATCH', `/api/v1/offers/${offerId}`, { body: { status } })).status, 200);

      it('answers a 404 page for a paused offer', async () => {
        const offerId = await newOffer(env);
        await setStatus(offerId, 'paused');
        await assertDeadLink(`/t/${offerId}/${partnerId}`);
      });

      it('answers a 404 page for an archived offer', async () => {
        const offerId = await newOffer(env);
        await setStatus(offerId, 'archived');
        await assertDeadLink(`/t/${offerId}/${partnerId}`);
      });

      it('answers a 404 page for an unknown offer', async () => {
        await assertDeadLink(`/t/off_01NOPE0000000000000000000/${partnerId}`);
      });

      it('answers a 404 page for an unknown partner', async () => {
        await assertDeadLink(`/t/${await newOffer(env)}/prt_01NOPE0000000000000000000`);
      });

      it('answers a 404 page for a banned partner', async () => {
        const banned = await newPartner(env);
        const ban = await env.request('POST', `/api/v1/partners/${banned}/ban`, { body: { reason: 'spam' } });
        assert.equal(ban.status, 200, JSON.stringify(ban.body));
        await assertDeadLink(`/t/${await newOffer(env)}/${banned}`);
      });

      it('answers a 404 page for a partner who is still an applicant', async () => {
        const applied = await env.request('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: env.brand.slug, name: 'Applicant', email: 'a@example.com' },
        });
        assert.equal(applied.status, 201, JSON.stringify(applied.body));
        assert.equal(applied.body.status, 'applicant');
        await assertDeadLink(`/t/${await newOffer(env)}/${applied.body.id}`);
      });

      it('answers a 404 page, not a 500, for an offer id containing a NUL byte', async () => {
        await assertDeadLink(`/t/${await newOffer(env)}%00/${partnerId}`);
      });

      it("answers a 404 page for a partner of another brand on this brand's offer", async () => {
        const other = await env.createBrand('Other Brand');
        const strangerId = await newPartner(env, other.apiKey);
        await assertDeadLink(`/t/${await newOffer(env)}/${strangerId}`);
      });
    });

    it('counts clicks in the report with conversionRate as the exact fraction and epcCents to two decimals', async () => {
      const offerId = await newOffer(env, { payoutCents: 1000, revenueCents: 2500 });
      for (let i = 0; i < 3; i++) assert.equal((await visit(env, `/t/${offerId}/${partnerId}`)).statusCode, 302);
      const conversion = await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      assert.equal(conversion.status, 201, JSON.stringify(conversion.body));
      const report = await env.request('GET', `/api/v1/reports?offerId=${offerId}`);
      assert.equal(report.status, 200, JSON.stringify(report.body));
      const { totals } = report.body;
      assert.equal(totals.clicks, 3);
      assert.equal(totals.conversions, 1);
      assert.equal(totals.conversionRate, 1 / 3);
      assert.equal(totals.epcCents, 333.33);
    });

    describe('GET /api/v1/clicks', () => {
      let offerA: string;
      let offerB: string;
      let otherPartner: string;
      let ids: Record<string, string>;
      before(async () => {
        offerA = await newOffer(env);
        offerB = await newOffer(env);
        otherPartner = await newPartner(env);
        const track = async (offerId: string, partner: string, headers = {}, ip = HOME_IP) =>
          new URL(
            String((await visit(env, `/t/${offerId}/${partner}`, headers, ip)).headers.location),
          ).searchParams.get('cid') as string;
        ids = {
          aMain: await track(offerA, partnerId),
          bMain: await track(offerB, partnerId),
          aOther: await track(offerA, otherPartner),
          // datacenter (50) + bot user agent (40) = 90, above the default threshold of 75
          aRisky: await track(offerA, otherPartner, { 'user-agent': 'curl/8.5.0' }, AWS_IP),
        };
      });
      const idsOf = async (query: string) => (await clicksOf(env, query)).data.map((c) => c.id);

      it('filters by offerId', async () => {
        assert.deepEqual(await idsOf(`offerId=${offerA}`), [ids.aRisky, ids.aOther, ids.aMain]);
        assert.deepEqual(await idsOf(`offerId=${offerB}`), [ids.bMain]);
      });

      it('filters by partnerId together with offerId', async () => {
        assert.deepEqual(await idsOf(`offerId=${offerA}&partnerId=${otherPartner}`), [ids.aRisky, ids.aOther]);
        assert.deepEqual((await idsOf(`partnerId=${otherPartner}`)).sort(), [ids.aRisky, ids.aOther].sort());
      });

      it('filters by highRisk', async () => {
        assert.deepEqual(await idsOf(`offerId=${offerA}&highRisk=true`), [ids.aRisky]);
        assert.deepEqual(await idsOf(`offerId=${offerA}&highRisk=false`), [ids.aOther, ids.aMain]);
      });

      it('answers 422, not a 500, for an offerId containing a NUL byte', async () => {
        expectError(await env.request('GET', '/api/v1/clicks?offerId=%00'), 422, 'validation_error');
      });

      it('pages newest first with the cursor until nextCursor is null', async () => {
        const offerId = await newOffer(env);
        for (let i = 0; i < 5; i++) await visit(env, `/t/${offerId}/${partnerId}?sub1=${i}`);
        const seen: Array<string | null> = [];
        let cursor: string | null = null;
        const pageSizes: number[] = [];
        do {
          const page = await clicksOf(env, `offerId=${offerId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
          pageSizes.push(page.data.length);
          seen.push(...page.data.map((c) => c.sub1));
          cursor = page.nextCursor;
        } while (cursor);
        assert.deepEqual(pageSizes, [2, 2, 1]);
        assert.deepEqual(seen, ['4', '3', '2', '1', '0']);
      });

      it('shows another brand none of these clicks', async () => {
        const other = await env.createBrand('Curious Brand');
        assert.deepEqual((await clicksOf(env, '', other.apiKey)).data, []);
        // Filtering by this brand's offer is 422 for the other brand (no offer of its own), not an empty list.
        const filtered = await env.request('GET', `/api/v1/clicks?offerId=${offerA}`, { key: other.apiKey });
        assert.equal(filtered.status, 422, JSON.stringify(filtered.body));
        assert.deepEqual(filtered.body.error.details, [{ path: 'query.offerId', message: 'no offer with this id' }]);
      });
    });
  });

  /** The IP recorded for one visit of a fresh link. */
  async function recordedIp(env: TestEnv, forwardedFor: string, remoteAddress: string) {
    const offerId = await newOffer(env);
    const partnerId = await newPartner(env);
    const res = await visit(env, `/t/${offerId}/${partnerId}`, { 'x-forwarded-for': forwardedFor }, remoteAddress);
    assert.equal(res.statusCode, 302);
    const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
    return click?.ip;
  }

  for (const setting of ['true', '1']) {
    describe(`GET /t/:offerId/:partnerId behind one trusted proxy, TRUST_PROXY=${setting} (${dialect})`, () => {
      let env: TestEnv;
      before(async () => {
        env = await createTestEnv(dialect, { env: { ...NO_LIMIT, TRUST_PROXY: setting } });
      });
      after(() => env.close());

      it('takes the client IP from X-Forwarded-For when TRUST_PROXY is set', async () => {
        const offerId = await newOffer(env);
        const partnerId = await newPartner(env);
        const res = await visit(env, `/t/${offerId}/${partnerId}`, { 'x-forwarded-for': AWS_IP }, '10.0.0.5');
        assert.equal(res.statusCode, 302);
        const [click] = (await clicksOf(env, `offerId=${offerId}`)).data;
        assert.equal(click?.ip, AWS_IP);
        assert.deepEqual(click?.fraudSignals, ['datacenter_ip']);
      });

      it('records the address the proxy appended, not one the client wrote before it', async () => {
        assert.equal(await recordedIp(env, `${HOME_IP}, ${AWS_IP}`, '10.0.0.5'), AWS_IP);
      });

      it('keeps the full IPv6 address of a click (limits count a /64, clicks do not)', async () => {
        assert.equal(await recordedIp(env, '2001:db8:5:6:a:b:c:d', '10.0.0.5'), '2001:db8:5:6:a:b:c:d');
      });
    });
  }

  describe(`GET /t/:offerId/:partnerId behind listed proxies, TRUST_PROXY=10.0.0.0/8,127.0.0.1 (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { ...NO_LIMIT, TRUST_PROXY: '10.0.0.0/8,127.0.0.1' } });
    });
    after(() => env.close());

    it('records the address in front of the nearest listed proxies', async () => {
      assert.equal(await recordedIp(env, `${HOME_IP}, ${AWS_IP}, 10.0.0.7`, '10.0.0.5'), AWS_IP);
    });

    it('records the peer when the peer is not a listed proxy, whatever it forwards', async () => {
      assert.equal(await recordedIp(env, AWS_IP, HOME_IP), HOME_IP);
    });
  });
}
