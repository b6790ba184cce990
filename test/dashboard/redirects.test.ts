import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

/** What a Location header may hold: printable ASCII only (Node refuses the rest with a 500). */
const HEADER_SAFE = /^[\x21-\x7e]*$/;

for (const dialect of testedDialects()) {
  describe(`dashboard redirects with characters a header cannot carry (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
    });
    after(() => env.close());

    // Ids and `back` paths come from the request decoded; each form answers a page or a
    // redirect with the path percent-encoded, never a 500.
    const posts: Array<[string, Record<string, string>]> = [
      ['/dashboard/conversions/bulk', { back: '/dashboard/日本', action: 'nope' }],
      ['/dashboard/conversions/bulk', { back: '/dashboard/\u0001x', action: 'nope' }],
      ['/dashboard/partners/%E6%97%A5/postbacks', { url: 'bad', events: 'conversion.created' }],
      ['/dashboard/partners/%E6%97%A5/postbacks/%E6%97%A5', { url: 'bad', events: 'conversion.created' }],
      ['/dashboard/webhooks/%E6%97%A5/recover', {}],
      ['/dashboard/webhooks/%01/test', { event: 'bogus' }],
    ];
    for (const [url, fields] of posts) {
      it(`POST ${url} ${JSON.stringify(fields)}`, async () => {
        const res = await client.post(url, fields);
        assert.ok(res.status < 500, `${res.status}: ${res.body.slice(0, 200)}`);
        if (res.status === 303) assert.match(res.location ?? '', HEADER_SAFE);
      });
    }

    it('sends a back path with non-ASCII characters percent-encoded', async () => {
      const res = await client.post('/dashboard/conversions/bulk', { back: '/dashboard/日本', action: 'nope' });
      assert.equal(res.status, 303);
      assert.equal(res.location, '/dashboard/%E6%97%A5%E6%9C%AC');
    });
  });
}
