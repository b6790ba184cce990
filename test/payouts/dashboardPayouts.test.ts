import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { localDay } from '../../src/calendar.js';
import { signedInClient } from '../dashboard/client.js';
import { testedDialects } from '../helpers.js';
import { PortalClient } from '../portal/client.js';
import { createHttpEnv, type HttpEnv } from './http.js';

for (const dialect of testedDialects()) {
  describe(`dashboard Payouts page, balances and portal invites (${dialect})`, () => {
    let env: HttpEnv;
    let partnerId: string;
    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      const offer = await env.http('POST', '/api/v1/offers', {
        body: { name: 'O', destinationUrl: 'https://shop.example/', payoutCents: 2500, conversionStatus: 'approved' },
      });
      partnerId = (
        await env.http('POST', '/api/v1/partners', { body: { name: 'Owed Partner', email: 'o@example.com' } })
      ).body.id;
      await env.http('POST', '/api/v1/conversions', { body: { offerId: offer.body.id, partnerId } });
      await env.http('POST', '/api/v1/conversions', {
        body: { offerId: offer.body.id, partnerId, currency: 'EUR', revenueCents: 0, payoutCents: 2500 },
      });
      env.clock.advance(60_000);
    });
    after(() => env.close());

    it("shows each partner's balance per currency on the partners list and the partner page", async () => {
      const client = await signedInClient(env);
      const list = await client.get('/dashboard/partners');
      assert.match(list.body, /€25\.00 · \$25\.00/);
      const page = await client.get(`/dashboard/partners/${partnerId}`);
      assert.match(page.body, /Partner portal and balance/);
      assert.match(page.body, /Invite to partner portal/);
    });

    it('invites a partner from the partner page with a link that opens the portal', async () => {
      const client = await signedInClient(env);
      await client.get(`/dashboard/partners/${partnerId}`);
      const invited = await client.post(`/dashboard/partners/${partnerId}/invite`);
      assert.equal(invited.status, 201);
      const url = /value="(http[^"]+\/portal\/invite\?token=[^"]+)"/.exec(invited.body)?.[1];
      assert.ok(url, 'the link is shown');
      const link = new URL(url.replaceAll('&amp;', '&'));
      assert.equal((await new PortalClient(env.base).get(`${link.pathname}${link.search}`)).status, 200);
      const other = await env.createBrand('Other');
      const stranger = await signedInClient(env, other.id);
      await stranger.get('/dashboard');
      assert.equal((await stranger.post(`/dashboard/partners/${partnerId}/invite`)).status, 404);
    });

    it('refuses to preview an existing run with another minimum, as confirming it would, on the run form', async () => {
      const client = await signedInClient(env);
      const yesterday = localDay(env.clock.now() - 86_400_000, 'UTC');
      const upTo = `${yesterday}T23:59:59.999Z`;
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo, minimumCents: 5 } });
      assert.equal(run.status, 201, JSON.stringify(run.body));
      const refused = await client.get(`/dashboard/payouts/new?day=${yesterday}&minimum=0`);
      assert.equal(refused.status, 409);
      assert.match(refused.body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
      assert.match(refused.body, /already exists with minimumCents 5/);
      assert.doesNotMatch(refused.body, /confirming shows its payouts again/);
      assert.doesNotMatch(refused.body, /action="\/dashboard\/payouts" /, 'no confirm button');
      assert.match(refused.body, new RegExp(`<input id="day" name="day" type="date" value="${yesterday}"`));
      assert.match(refused.body, /<input id="minimum" name="minimum" type="text" value="0"/);
      // With the run's own minimum the preview shows the run, and confirming returns it.
      const same = await client.get(`/dashboard/payouts/new?day=${yesterday}&minimum=5`);
      assert.equal(same.status, 200);
      assert.match(same.body, /confirming shows its payouts again and creates nothing/);
      const confirmed = await client.post('/dashboard/payouts', { upTo, partnerId: '', minimumCents: '5' });
      assert.equal(confirmed.status, 303);
    });

    it('previews a run, creates it on confirmation, marks a payout paid and exports it as CSV', async () => {
      const client = await signedInClient(env);
      const day = localDay(env.clock.now(), 'UTC');
      const preview = await client.get(`/dashboard/payouts/new?day=${day}&partnerId=${partnerId}`);
      assert.equal(preview.status, 200);
      assert.match(preview.body, /Owed Partner/);
      assert.match(preview.body, /Create 2 payouts/);
      assert.doesNotMatch(
        preview.body,
        /approved up to \d{4}-\d{2}-\d{2}T/,
        'the end in the brand time zone, not raw ISO',
      );
      assert.equal(await env.ctx.db.read.selectFrom('payouts').select('id').executeTakeFirst(), undefined);
      const upTo = /name="upTo" value="([^"]+)"/.exec(preview.body)?.[1] ?? '';
      const created = await client.post('/dashboard/payouts', { upTo, partnerId, minimumCents: '0' });
      assert.equal(created.status, 303);
      const list = await client.get('/dashboard/payouts');
      assert.match(list.body, /Created 2 payouts\./);
      const id = /\/dashboard\/payouts\/(pay_[A-Z0-9]+)"/.exec(list.body)?.[1];
      assert.ok(id);
      const detail = await client.get(`/dashboard/payouts/${id}`);
      assert.match(detail.body, /Mark paid/);
      const csv = await client.get(`/dashboard/payouts/${id}/export.csv`);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      assert.match(csv.body, /^payout_id,status,partner_id/);
      assert.equal(csv.body.trimEnd().split('\r\n').length, 2);
      const paid = await client.post(`/dashboard/payouts/${id}/mark-paid`, { reference: 'WIRE-7' });
      assert.equal(paid.status, 303);
      const after = await client.get(`/dashboard/payouts/${id}`);
      assert.match(after.body, /marked paid/);
      assert.match(after.body, /WIRE-7/);
      const again = await client.post('/dashboard/payouts', { upTo, partnerId, minimumCents: '0' });
      assert.equal(again.status, 303);
      assert.match((await client.get('/dashboard/payouts')).body, /already existed/);

      const other = await env.createBrand('Third');
      const stranger = await signedInClient(env, other.id);
      assert.equal((await stranger.get(`/dashboard/payouts/${id}`)).status, 404);
      assert.equal((await stranger.get(`/dashboard/payouts/${id}/export.csv`)).status, 404);
      await stranger.get('/dashboard/payouts');
      assert.equal((await stranger.post(`/dashboard/payouts/${id}/cancel`)).status, 404);
      assert.equal((await client.get(`/dashboard/payouts/new?day=2999-01-01`)).status, 422);

      // A banned partner's payouts still show the partner's name, not its id.
      const banned = await env.http('POST', `/api/v1/partners/${partnerId}/ban`, { body: { reason: 'fraud' } });
      assert.equal(banned.status, 200);
      const listed = (await client.get('/dashboard/payouts')).body;
      assert.match(listed, /Owed Partner/);
      assert.doesNotMatch(listed, new RegExp(`>${partnerId}<`));
    });
  });
}
