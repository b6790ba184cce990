import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const BROWSER_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const MINUTE = 60_000;
/** Datacenter IP (50) + bot user agent (40) = 90: high risk at the default threshold of 75. */
const RISKY = { ip: '3.5.140.1', userAgent: 'curl/8.5.0' };
/** Datacenter IP alone = 50: flagged, but not high risk. */
const FLAGGED = { ip: '3.5.140.2', userAgent: BROWSER_UA };
const NORMAL = { ip: '81.2.69.142', userAgent: BROWSER_UA };

for (const dialect of testedDialects()) {
  describe(`automation bans of partners (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      const offer = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Offer', destinationUrl: 'https://shop.example/' },
      });
      assert.equal(offer.status, 201, JSON.stringify(offer.body));
      offerId = offer.body.id;
    });
    after(() => env.close());

    async function newPartner(name = 'Partner'): Promise<string> {
      const res = await env.request('POST', '/api/v1/partners', { body: { name, email: 'p@example.com' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    }
    /** Follows the partner's tracking link; returns the HTTP status. */
    async function click(partnerId: string, visit: { ip: string; userAgent: string }): Promise<number> {
      const res = await env.app.inject({
        url: `/t/${offerId}/${partnerId}`,
        headers: { 'user-agent': visit.userAgent },
        remoteAddress: visit.ip,
      });
      return res.statusCode;
    }
    /** Clicks, then moves the clock on, so velocity never adds to the score. */
    async function clickAndWait(partnerId: string, visit: { ip: string; userAgent: string }, waitMs = MINUTE) {
      const status = await click(partnerId, visit);
      env.clock.advance(waitMs);
      return status;
    }
    const statusOf = async (partnerId: string) => (await env.request('GET', `/api/v1/partners/${partnerId}`)).body;
    async function bannedEvents(partnerId: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', 'partner.banned')
        .execute();
      return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.partnerId === partnerId);
    }
    async function clicksOf(partnerId: string) {
      return (await env.request('GET', `/api/v1/clicks?partnerId=${partnerId}&limit=100`)).body.data;
    }

    describe('while the brand has no rule', () => {
      it('has autoBan off by default', async () => {
        assert.equal((await env.request('GET', '/api/v1/brand')).body.autoBan, null);
      });

      it('keeps a partner active however many high-risk clicks it sends', async () => {
        const partnerId = await newPartner();
        for (let i = 0; i < 10; i++) assert.equal(await clickAndWait(partnerId, RISKY, 1000), 302);
        const clicks: Array<{ highRisk: boolean }> = await clicksOf(partnerId);
        assert.equal(clicks.length, 10, 'every click was stored');
        assert.ok(clicks.every((c) => c.highRisk));
        assert.equal((await statusOf(partnerId)).status, 'active');
        assert.equal((await bannedEvents(partnerId)).length, 0);
      });
    });

    describe('with a rule of 3 high-risk clicks within 10 minutes', () => {
      before(async () => {
        const res = await env.request('PATCH', '/api/v1/brand', {
          body: { autoBan: { highRiskClicks: 3, windowMinutes: 10 } },
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(res.body.autoBan, { highRiskClicks: 3, windowMinutes: 10 });
      });

      it('bans the partner on the third high-risk click, firing partner.banned by automation once', async () => {
        const partnerId = await newPartner('Fraudster');
        assert.equal(await clickAndWait(partnerId, RISKY, 4 * MINUTE), 302);
        assert.equal(await clickAndWait(partnerId, RISKY, 5 * MINUTE + 59_000), 302);
        assert.equal((await statusOf(partnerId)).status, 'active', 'two clicks are not enough');
        const bannedAt = new Date(env.clock.now()).toISOString();
        assert.equal(await click(partnerId, RISKY), 302, 'the third click itself is still redirected');

        const partner = await statusOf(partnerId);
        assert.equal(partner.status, 'banned');
        assert.equal(partner.bannedAt, bannedAt);
        const events = await bannedEvents(partnerId);
        assert.equal(events.length, 1);
        const { reason, ...rest } = events[0].data;
        assert.deepEqual(rest, {
          partnerId,
          name: 'Fraudster',
          email: 'p@example.com',
          website: null,
          status: 'banned',
          bannedBy: 'automation',
          metadata: {},
        });
        assert.match(reason, /\b3\b/);
        assert.match(reason, /\b10\b/);
        assert.equal(partner.banReason, reason);
      });

      it('answers 404 to the next click of the banned partner, storing nothing and firing nothing', async () => {
        const partnerId = await newPartner();
        for (let i = 0; i < 3; i++) await clickAndWait(partnerId, RISKY);
        assert.equal((await statusOf(partnerId)).status, 'banned');
        assert.equal(await click(partnerId, RISKY), 404);
        assert.equal(await click(partnerId, NORMAL), 404);
        assert.equal((await clicksOf(partnerId)).length, 3);
        assert.equal((await bannedEvents(partnerId)).length, 1);
      });

      it('does not ban when the high-risk clicks are spread beyond the window', async () => {
        const partnerId = await newPartner();
        // Six minutes apart: any 10-minute window holds two of them at most.
        for (let i = 0; i < 6; i++) assert.equal(await clickAndWait(partnerId, RISKY, 6 * MINUTE), 302);
        assert.equal((await statusOf(partnerId)).status, 'active');
        assert.equal((await bannedEvents(partnerId)).length, 0);
      });

      it('never counts low-risk clicks towards the rule', async () => {
        const partnerId = await newPartner();
        for (let i = 0; i < 5; i++) await clickAndWait(partnerId, NORMAL, 1000);
        for (let i = 0; i < 5; i++) await clickAndWait(partnerId, FLAGGED, 1000);
        await clickAndWait(partnerId, RISKY, 1000);
        await clickAndWait(partnerId, RISKY, 1000);
        const scores = (await clicksOf(partnerId))
          .map((c: { fraudScore: number }) => c.fraudScore)
          .sort((a: number, b: number) => a - b);
        assert.deepEqual(scores, [0, 0, 0, 0, 0, 50, 50, 50, 50, 50, 90, 90]);
        assert.equal((await statusOf(partnerId)).status, 'active', '10 low-risk and 2 high-risk clicks');
        await clickAndWait(partnerId, RISKY, 1000);
        assert.equal((await statusOf(partnerId)).status, 'banned', 'the third high-risk click');
      });

      it("counts only this partner's high-risk clicks", async () => {
        const first = await newPartner();
        const second = await newPartner();
        await clickAndWait(first, RISKY, 1000);
        await clickAndWait(second, RISKY, 1000);
        await clickAndWait(first, RISKY, 1000);
        await clickAndWait(second, RISKY, 1000);
        assert.equal((await statusOf(first)).status, 'active');
        assert.equal((await statusOf(second)).status, 'active');
      });
    });
  });
}
