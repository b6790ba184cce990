/**
 * The automation ban under concurrency (issue #12, point 5): a burst of bot clicks sent at
 * once, over real HTTP, to one app instance or to two instances on one database (as two
 * processes would be). Once the rule's count is reached no further click of the partner may
 * be redirected — exactly `highRiskClicks` redirects, whatever the interleaving.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { servedInstances, type TestEnv, testedDialects } from '../helpers.js';

const RULE = { highRiskClicks: 5, windowMinutes: 10 };
const BURST = 50;
/** A datacenter address (50) and a bot user agent (40): high risk at the default threshold of 75. */
const BOT = { 'x-forwarded-for': '3.5.140.1', 'user-agent': 'curl/8.5.0' };
const SETTINGS = { RATE_LIMIT_PER_MINUTE: '100000', TRUST_PROXY: 'true' };

for (const dialect of testedDialects()) {
  for (const instances of [1, 2] as const) {
    describe(`automation ban of a burst of ${BURST} bot clicks on ${instances} app instance(s) (${dialect})`, () => {
      const cleanup: Array<() => Promise<void>> = [];
      after(async () => {
        for (const step of cleanup.reverse()) await step();
      });

      it(`redirects exactly ${RULE.highRiskClicks} clicks, stores only those and bans the partner once`, async () => {
        const { envs, bases } = await servedInstances(dialect, instances, SETTINGS, cleanup);
        const first = envs[0] as TestEnv;

        assert.equal((await first.request('PATCH', '/api/v1/brand', { body: { autoBan: RULE } })).status, 200);
        const offer = await first.request('POST', '/api/v1/offers', {
          body: { name: 'Offer', destinationUrl: 'https://shop.example/' },
        });
        const partner = await first.request('POST', '/api/v1/partners', {
          body: { name: 'Bot farm', email: 'bots@example.com' },
        });
        const path = `/t/${offer.body.id}/${partner.body.id}`;

        const statuses = await Promise.all(
          Array.from({ length: BURST }, async (_, i) => {
            const res = await fetch(`${bases[i % bases.length]}${path}`, { headers: BOT, redirect: 'manual' });
            await res.arrayBuffer();
            return res.status;
          }),
        );

        const redirected = statuses.filter((s) => s === 302).length;
        assert.equal(redirected, RULE.highRiskClicks, `statuses: ${statuses.join(',')}`);
        assert.equal(statuses.filter((s) => s === 404).length, BURST - RULE.highRiskClicks);
        const stored = await first.request('GET', `/api/v1/clicks?partnerId=${partner.body.id}&limit=100`);
        assert.equal(stored.body.data.length, RULE.highRiskClicks, 'only the redirected clicks are stored');
        assert.equal((await first.request('GET', `/api/v1/partners/${partner.body.id}`)).body.status, 'banned');
        const bans = await first.ctx.db.read
          .selectFrom('events')
          .select('payload')
          .where('type', '=', 'partner.banned')
          .execute();
        assert.equal(bans.length, 1, 'partner.banned fires once');
      });
    });
  }
}
