/**
 * One rule for every ISO 8601 timestamp parameter (calendar.ts `isInstant`): the same
 * texts are taken, and the same refused with 422, by GET /conversions?from=, GET
 * /api/public/events?since= and GET /payouts/preview?upTo=.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const TAKEN = [
  '2026-11-20T13:00:00Z',
  '2026-11-20T13:00Z',
  '2026-11-20T13:00:00.123Z',
  '2026-11-20T13:00:00.123456789Z',
  '2026-11-20t13:00:00z',
  '2026-11-20 13:00:00Z',
  '2026-11-20T13:00:00+05:30',
];
const REFUSED = [
  '2026-11-20T24:00:00Z',
  '2026-11-20T13:00:00',
  '2026-02-30T10:00:00Z',
  '2026-11-20T13:60Z',
  '2026-11-20T13:00:00+24:00',
];

for (const dialect of testedDialects()) {
  describe(`timestamp parameters (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
    });
    after(() => env.close());

    const routes = [
      (t: string) => `/api/v1/conversions?from=${encodeURIComponent(t)}`,
      (t: string) => `/api/public/events?since=${encodeURIComponent(t)}`,
      (t: string) => `/api/v1/payouts/preview?upTo=${encodeURIComponent(t)}`,
    ];

    it('takes the same timestamps on every route', async () => {
      for (const route of routes) {
        for (const text of TAKEN) {
          const res = await env.request('GET', route(text));
          assert.equal(res.status, 200, `${route(text)}: ${JSON.stringify(res.body)}`);
        }
      }
    });

    it('refuses the same timestamps on every route with 422', async () => {
      for (const route of routes) {
        for (const text of REFUSED) {
          const res = await env.request('GET', route(text));
          assert.equal(res.status, 422, `${route(text)}: ${JSON.stringify(res.body)}`);
        }
      }
    });
  });
}
