/**
 * The velocity signal under concurrency (scale-out finding 1): a burst of clicks from one IP
 * on one offer, sent at once over real HTTP to one app instance or to two instances on one
 * database (as two processes would be). Whatever the interleaving, the n-th click stored sees
 * the n−1 stored before it, so exactly the clicks after the fifth carry `click_velocity` —
 * as when the same clicks arrive one after another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VELOCITY_MAX_CLICKS } from '../../src/modules/fraud/scoring.js';
import { postgresOnly, servedInstances, type TestEnv, testedDialects } from '../helpers.js';

const BURST = 20;
const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
/** An ordinary visitor: score 0, or 30 with velocity; never high risk (PostgreSQL stores it in a batch). */
const HOME_IP = '81.2.69.142';
/** A datacenter address: 50, or 80 with velocity, high risk (PostgreSQL stores it in a transaction). */
const AWS_IP = '3.5.140.1';
/** Blocklisted below: a user agent whose clicks are high risk whatever their velocity. */
const BLOCKED_UA = 'BurstBot/1.0 (compatible; like Chrome)';
const SETTINGS = { RATE_LIMIT_PER_MINUTE: '100000', TRUST_PROXY: 'true' };

interface StoredClick {
  id: string;
  fraudSignals: string[];
  highRisk: boolean;
}

for (const dialect of testedDialects()) {
  for (const instances of [1, 2] as const) {
    const skip = instances === 1 ? { skip: false as const } : postgresOnly(dialect);
    describe(`click_velocity of a burst of ${BURST} clicks on ${instances} app instance(s) (${dialect})`, skip, () => {
      const cleanup: Array<() => Promise<void>> = [];
      let first: TestEnv;
      let bases: string[];
      let partnerId: string;
      before(async () => {
        const served = await servedInstances(dialect, instances, SETTINGS, cleanup);
        [first] = served.envs as [TestEnv];
        bases = served.bases;
        const partner = await first.request('POST', '/api/v1/partners', {
          body: { name: 'Burst', email: 'burst@example.com' },
        });
        partnerId = partner.body.id;
        const blocked = await first.request('POST', '/api/v1/fraud/blocklist', {
          body: { type: 'userAgent', value: 'BurstBot' },
        });
        assert.equal(blocked.status, 201, JSON.stringify(blocked.body));
      });
      after(async () => {
        for (const step of cleanup.reverse()) await step();
      });

      /** Sends the burst at once, spread over the instances; returns the clicks stored. */
      async function burst(ip: string, userAgentOf: (i: number) => string): Promise<StoredClick[]> {
        const offer = await first.request('POST', '/api/v1/offers', {
          body: { name: 'Offer', destinationUrl: 'https://shop.example/' },
        });
        const path = `/t/${offer.body.id}/${partnerId}`;
        const statuses = await Promise.all(
          Array.from({ length: BURST }, async (_, i) => {
            const res = await fetch(`${bases[i % bases.length]}${path}`, {
              headers: { 'x-forwarded-for': ip, 'user-agent': userAgentOf(i) },
              redirect: 'manual',
            });
            await res.arrayBuffer();
            return res.status;
          }),
        );
        assert.deepEqual(
          statuses,
          statuses.map(() => 302),
        );
        const listed = await first.request('GET', `/api/v1/clicks?offerId=${offer.body.id}&limit=100`);
        assert.equal(listed.body.data.length, BURST);
        return listed.body.data;
      }

      const withVelocity = (clicks: StoredClick[]) => clicks.filter((c) => c.fraudSignals.includes('click_velocity'));

      it(`flags exactly the clicks after the first ${VELOCITY_MAX_CLICKS} of an ordinary visitor`, async () => {
        const clicks = await burst(HOME_IP, () => BROWSER_UA);
        assert.equal(withVelocity(clicks).length, BURST - VELOCITY_MAX_CLICKS);
      });

      it('makes exactly the clicks after the fifth of a datacenter visitor high risk, one event each', async () => {
        const clicks = await burst(AWS_IP, () => BROWSER_UA);
        const flagged = withVelocity(clicks);
        assert.equal(flagged.length, BURST - VELOCITY_MAX_CLICKS);
        assert.deepEqual(
          clicks.filter((c) => c.highRisk).map((c) => c.id),
          flagged.map((c) => c.id),
        );
        const events = await first.ctx.db.read
          .selectFrom('events')
          .select('payload')
          .where('type', '=', 'fraud.high_risk')
          .execute();
        const ids = new Set(clicks.map((c) => c.id));
        const ofBurst = events.map((e) => JSON.parse(e.payload).data.clickId).filter((id: string) => ids.has(id));
        assert.deepEqual(ofBurst.sort(), flagged.map((c) => c.id).sort());
      });

      it('counts every click of the IP, whether it may be high risk (blocklisted user agent) or not', async () => {
        const clicks = await burst(HOME_IP, (i) => (i % 3 === 0 ? BLOCKED_UA : BROWSER_UA));
        assert.equal(withVelocity(clicks).length, BURST - VELOCITY_MAX_CLICKS);
      });
    });
  }
}
