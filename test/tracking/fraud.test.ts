import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jsonValidator } from '../../src/http/validation.js';
import { approveExpiredHolds } from '../../src/modules/conversions/service.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const BROWSER_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const HOME_IP = '81.2.69.142';
const AWS_IP = '3.5.140.1';
const NO_LIMIT = { RATE_LIMIT_PER_MINUTE: '100000' };

interface Visit {
  ip?: string;
  userAgent?: string | null;
  subs?: string;
}

for (const dialect of testedDialects()) {
  describe(`fraud scoring of clicks (${dialect})`, () => {
    let env: TestEnv;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: NO_LIMIT });
      partnerId = await newPartner();
    });
    after(() => env.close());

    async function newOffer(body: Record<string, unknown> = {}, key?: string): Promise<string> {
      const res = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Offer', destinationUrl: 'https://shop.example/?cid={click_id}', ...body },
        key,
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    async function newPartner(key?: string): Promise<string> {
      const res = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' }, key });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    /** Follows the tracking link and returns the stored click as GET /api/v1/clicks lists it. */
    async function click(offerId: string, visit: Visit = {}, partner = partnerId, key?: string) {
      const ua = visit.userAgent === undefined ? BROWSER_UA : visit.userAgent;
      const res = await env.app.inject({
        url: `/t/${offerId}/${partner}${visit.subs ? `?${visit.subs}` : ''}`,
        headers: { 'user-agent': ua ?? undefined },
        remoteAddress: visit.ip ?? HOME_IP,
      });
      assert.equal(res.statusCode, 302, res.body);
      const id = new URL(String(res.headers.location)).searchParams.get('cid');
      const list = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=100`, { key });
      const found = list.body.data.find((c: { id: string }) => c.id === id);
      assert.ok(found, `click ${id} listed`);
      return found;
    }
    async function highRiskEvents(clickId: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', 'fraud.high_risk')
        .execute();
      return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.clickId === clickId);
    }
    const block = async (type: string, value: string, key?: string) => {
      const res = await env.request('POST', '/api/v1/fraud/blocklist', { body: { type, value }, key });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };
    const setThreshold = async (fraudThreshold: number) =>
      assert.equal((await env.request('PATCH', '/api/v1/brand', { body: { fraudThreshold } })).status, 200);

    describe('each signal alone', () => {
      it('scores a click from a residential IP with a browser user agent 0', async () => {
        const c = await click(await newOffer());
        assert.deepEqual([c.fraudScore, c.fraudSignals, c.highRisk], [0, [], false]);
      });

      it('adds 80 for an IP on the blocklist', async () => {
        await block('ip', '198.51.100.7');
        const c = await click(await newOffer(), { ip: '198.51.100.7' });
        assert.deepEqual([c.fraudScore, c.fraudSignals, c.highRisk], [80, ['high_risk_score', 'blocklist_hit'], true]);
      });

      it('adds 80 for an IP inside a blocklisted CIDR range, IPv4 or IPv6', async () => {
        await block('cidr', '192.0.2.0/24');
        await block('cidr', '2001:db8:bad::/48');
        const offerId = await newOffer();
        assert.equal((await click(offerId, { ip: '192.0.2.200' })).fraudScore, 80);
        const v6 = await click(offerId, { ip: '2001:db8:bad::7' });
        assert.deepEqual([v6.fraudScore, v6.fraudSignals], [80, ['high_risk_score', 'blocklist_hit']]);
        assert.equal((await click(offerId, { ip: '2001:db8:cafe::7' })).fraudScore, 0);
      });

      it('adds 80 for a user agent containing a blocklisted substring in any case', async () => {
        await block('userAgent', 'AcmeToolbar');
        const offerId = await newOffer();
        const c = await click(offerId, { userAgent: `${BROWSER_UA} ACMETOOLBAR/2.0` });
        assert.deepEqual([c.fraudScore, c.fraudSignals], [80, ['high_risk_score', 'blocklist_hit']]);
        assert.equal((await click(offerId, { userAgent: `${BROWSER_UA} acmetoolbar/2.0` })).fraudScore, 80);
      });

      it('adds 50 for a datacenter IP, which alone is not high risk', async () => {
        const c = await click(await newOffer(), { ip: AWS_IP });
        assert.deepEqual([c.fraudScore, c.fraudSignals, c.highRisk], [50, ['datacenter_ip'], false]);
      });

      it('adds 40 for a bot user agent', async () => {
        const c = await click(await newOffer(), { userAgent: 'curl/8.5.0' });
        assert.deepEqual([c.fraudScore, c.fraudSignals, c.highRisk], [40, ['bot_user_agent'], false]);
      });

      it('adds 40 when the user agent is missing', async () => {
        const c = await click(await newOffer(), { userAgent: null });
        assert.equal(c.userAgent, null);
        assert.deepEqual([c.fraudScore, c.fraudSignals], [40, ['bot_user_agent']]);
      });

      it('adds 30 on the sixth click of one IP on one offer within 60 seconds', async () => {
        const offerId = await newOffer();
        for (let i = 0; i < 5; i++) assert.equal((await click(offerId)).fraudScore, 0, `click ${i + 1}`);
        assert.equal((await click(offerId, { ip: '81.2.69.143' })).fraudScore, 0, 'another IP is not counted');
        env.clock.advance(59_999);
        const sixth = await click(offerId);
        assert.deepEqual([sixth.fraudScore, sixth.fraudSignals], [30, ['click_velocity']]);
      });

      it('does not add it once the earlier clicks have left the 60-second window', async () => {
        const offerId = await newOffer();
        for (let i = 0; i < 5; i++) await click(offerId);
        env.clock.advance(60_000);
        const sixth = await click(offerId);
        assert.deepEqual([sixth.fraudScore, sixth.fraudSignals], [0, []]);
      });
    });

    it('adds the weights of signals that occur together: datacenter and bot make 90, high risk at 75', async () => {
      const c = await click(await newOffer(), { ip: AWS_IP, userAgent: 'curl/8.5.0' });
      assert.deepEqual(
        [c.fraudScore, c.fraudSignals, c.highRisk],
        [90, ['high_risk_score', 'datacenter_ip', 'bot_user_agent'], true],
      );
    });

    describe('the brand threshold', () => {
      after(() => setThreshold(75));

      it('does not make a click whose score equals the threshold high risk, nor fire an event', async () => {
        await setThreshold(50);
        const c = await click(await newOffer(), { ip: AWS_IP });
        assert.deepEqual([c.fraudScore, c.highRisk, c.fraudSignals], [50, false, ['datacenter_ip']]);
        assert.equal((await highRiskEvents(c.id)).length, 0);
      });

      it('makes a click high risk when its score is one above the threshold', async () => {
        await setThreshold(49);
        const c = await click(await newOffer(), { ip: AWS_IP });
        assert.deepEqual([c.fraudScore, c.highRisk, c.fraudSignals], [50, true, ['high_risk_score', 'datacenter_ip']]);
        const [event] = await highRiskEvents(c.id);
        assert.equal(event?.data.threshold, 49);
      });
    });

    it('fires fraud.high_risk once with every field, valid against the catalogue schema', async () => {
      const offerId = await newOffer();
      const c = await click(offerId, { ip: AWS_IP, userAgent: 'curl/8.5.0' });
      const events = await highRiskEvents(c.id);
      assert.equal(events.length, 1);
      const [event] = events;
      assert.deepEqual(Object.keys(event), ['id', 'event', 'createdAt', 'brandId', 'data']);
      assert.equal(event.event, 'fraud.high_risk');
      assert.equal(event.brandId, env.brand.id);
      assert.equal(event.createdAt, c.createdAt);
      assert.deepEqual(event.data, {
        clickId: c.id,
        offerId,
        partnerId,
        score: 90,
        threshold: 75,
        signals: ['high_risk_score', 'datacenter_ip', 'bot_user_agent'],
        ip: AWS_IP,
        userAgent: 'curl/8.5.0',
      });
      const catalogue = await env.request('GET', '/api/public/webhook-events', { key: null });
      const entry = catalogue.body.data.find((e: { name: string }) => e.name === 'fraud.high_risk');
      const validate = jsonValidator(entry.schema);
      assert.ok(validate(event.data), JSON.stringify(validate.errors));
    });

    describe('the blocklist API', () => {
      it('adds, lists and deletes entries', async () => {
        const entry = await block('ip', '203.0.113.9');
        assert.match(entry.id, /^blk_[0-9A-Z]{26}$/);
        assert.deepEqual(entry, {
          id: entry.id,
          type: 'ip',
          value: '203.0.113.9',
          createdAt: new Date(env.clock.now()).toISOString(),
        });
        assert.deepEqual((await env.request('GET', '/api/v1/fraud/blocklist')).body.data[0], entry);
        const removed = await env.request('DELETE', `/api/v1/fraud/blocklist/${entry.id}`);
        assert.equal(removed.status, 204);
        const ids = (await env.request('GET', '/api/v1/fraud/blocklist')).body.data.map((e: { id: string }) => e.id);
        assert.ok(!ids.includes(entry.id));
      });

      it('rejects an invalid IP or CIDR range with 422', async () => {
        const invalid = ['ip 300.1.1.1', 'ip not-an-ip', 'cidr 10.0.0.0/33', 'cidr 10.0.0.0', 'cidr 2001:db8::/129'];
        for (const [type, value] of invalid.map((text) => text.split(' '))) {
          const res = await env.request('POST', '/api/v1/fraud/blocklist', { body: { type, value } });
          const error = expectError(res, 422, 'validation_error');
          assert.equal(error.details?.[0]?.path, 'value', `${type} ${value}`);
        }
      });

      it('answers 404 when deleting an unknown entry', async () => {
        expectError(
          await env.request('DELETE', '/api/v1/fraud/blocklist/blk_01NOPE0000000000000000000'),
          404,
          'not_found',
        );
      });

      it("answers 404 when deleting another brand's entry, and leaves it in place", async () => {
        const other = await env.createBrand('Other Brand');
        const entry = await block('ip', '203.0.113.10', other.apiKey);
        expectError(await env.request('DELETE', `/api/v1/fraud/blocklist/${entry.id}`), 404, 'not_found');
        const theirs = await env.request('GET', '/api/v1/fraud/blocklist', { key: other.apiKey });
        assert.deepEqual(theirs.body.data, [entry]);
        const ours = await env.request('GET', '/api/v1/fraud/blocklist');
        assert.ok(!ours.body.data.some((e: { id: string }) => e.id === entry.id));
      });

      it('never answers 500 for a NUL byte in an entry value or id', async () => {
        const added = await env.request('POST', '/api/v1/fraud/blocklist', {
          body: { type: 'userAgent', value: 'a\u0000b' },
        });
        assert.ok([201, 422].includes(added.status), `POST answered ${added.status}`);
        expectError(await env.request('DELETE', '/api/v1/fraud/blocklist/blk_%00'), 404, 'not_found');
      });

      it('applies an added entry to the next click and stops it as soon as the entry is removed', async () => {
        const offerId = await newOffer();
        const ip = '203.0.113.77';
        assert.equal((await click(offerId, { ip })).fraudScore, 0); // also warms the cache
        const entry = await block('ip', ip);
        env.clock.advance(60_000); // keep velocity out of the picture
        assert.deepEqual((await click(offerId, { ip })).fraudSignals, ['high_risk_score', 'blocklist_hit']);
        assert.equal((await env.request('DELETE', `/api/v1/fraud/blocklist/${entry.id}`)).status, 204);
        const after = await click(offerId, { ip });
        assert.deepEqual([after.fraudScore, after.fraudSignals], [0, []]);
      });
    });

    describe('conversions attributed to a click', () => {
      const convert = (body: Record<string, unknown>, key?: string) =>
        env.request('POST', '/api/v1/conversions', { body, key });

      it('start pending with holdUntil null when the click was high risk, though the offer starts approved', async () => {
        const c = await click(await newOffer({ conversionStatus: 'approved' }), {
          ip: AWS_IP,
          userAgent: 'curl/8.5.0',
        });
        const res = await convert({ clickId: c.id });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.deepEqual([res.body.status, res.body.holdUntil, res.body.approvedAt], ['pending', null, null]);
      });

      it('from a high-risk click get no hold time and are never approved automatically', async () => {
        const c = await click(await newOffer({ holdSeconds: 60 }), { ip: AWS_IP, userAgent: 'curl/8.5.0' });
        const res = await convert({ clickId: c.id });
        assert.deepEqual([res.body.status, res.body.holdUntil], ['pending', null]);
        env.clock.advance(3600_000);
        await approveExpiredHolds(env.ctx);
        assert.equal((await env.request('GET', `/api/v1/conversions/${res.body.id}`)).body.status, 'pending');
      });

      it('take offer, partner and subs from the click', async () => {
        const offerId = await newOffer({ conversionStatus: 'approved' });
        const c = await click(offerId, { subs: 'sub1=a&sub2=b&sub3=c&sub4=d&sub5=e' });
        const res = await convert({ clickId: c.id });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        const b = res.body;
        assert.deepEqual(
          [b.clickId, b.offerId, b.partnerId, b.status, b.sub1, b.sub2, b.sub3, b.sub4, b.sub5],
          [c.id, offerId, partnerId, 'approved', 'a', 'b', 'c', 'd', 'e'],
        );
      });

      it('answer 422 for a click of another brand', async () => {
        const other = await env.createBrand('Click Owner');
        const theirClick = await click(
          await newOffer({}, other.apiKey),
          {},
          await newPartner(other.apiKey),
          other.apiKey,
        );
        const error = expectError(await convert({ clickId: theirClick.id }), 422, 'validation_error');
        assert.equal(error.details?.[0]?.path, 'clickId');
      });

      it('answer 422 for a clickId containing a NUL byte', async () => {
        expectError(await convert({ clickId: 'clk_\u0000' }), 422, 'validation_error');
      });

      it('answer 422 when offerId does not match the click', async () => {
        const c = await click(await newOffer());
        const error = expectError(await convert({ clickId: c.id, offerId: await newOffer() }), 422, 'validation_error');
        assert.equal(error.details?.[0]?.path, 'offerId');
      });
    });
  });
}
