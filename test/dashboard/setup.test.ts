/**
 * Setting the program up from the dashboard alone: partners added and searched, postback
 * URLs added, edited, tested against a real receiver and deleted, an offer's pixel URL
 * created and rotated, each API key's rate limit shown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { startReceiver } from './browser.js';
import { type DashboardClient, signedInClient } from './client.js';

async function followFlash(client: DashboardClient, res: { status: number; location: string | undefined }) {
  assert.equal(res.status, 303, 'the form redirects');
  const page = await client.get(res.location!);
  return /class="flash (?:ok|error)" role="(?:status|alert)">([^<]*)</.exec(page.body)?.[1] ?? '';
}

for (const dialect of testedDialects()) {
  describe(`dashboard set-up without the API (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;

    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
      receiver = await startReceiver(() => ({ status: 200, body: 'OK got it' }));
    });
    after(async () => {
      await receiver.close();
      await env.close();
    });

    it('adds an active partner from the form', async () => {
      const res = await client.post('/dashboard/partners/new', { name: 'Acme Ads', email: 'ads@acme.example' });
      assert.equal(await followFlash(client, res), 'Acme Ads is added and active.');
      const id = res.location!.split('/').pop()!;
      const partner = (await env.request('GET', `/api/v1/partners/${id}`)).body;
      assert.equal(partner.status, 'active');
      assert.equal(partner.email, 'ads@acme.example');
    });

    it('brings a refused partner back to the open Add a partner form, with what was typed and each problem beside its field', async () => {
      const bad = await client.post('/dashboard/partners/new', {
        name: 'Überblick Média',
        email: 'not-an-email',
        website: 'ftp://x',
      });
      assert.equal(bad.status, 422);
      assert.match(bad.body, /<details class="panel" open>\s*<summary>Add a partner<\/summary>/);
      assert.match(bad.body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
      assert.match(bad.body, /<a href="#email">Email<\/a>: must be an email address/);
      assert.match(bad.body, /id="name"[^>]*value="Überblick Média"/);
      assert.match(
        bad.body,
        /id="email"[^>]*value="not-an-email"[^>]*aria-invalid="true" aria-describedby="email-error"/,
      );
      assert.match(bad.body, /id="email-error">must be an email address</);
      assert.match(
        bad.body,
        /id="website"[^>]*value="ftp:\/\/x"[^>]*aria-invalid="true" aria-describedby="website-error"/,
      );
      assert.match(bad.body, /id="website-error">must be an absolute http\(s\) URL/);
      assert.doesNotMatch(bad.body, /id="name"[^>]*aria-invalid/);
      // The list's approve buttons still come back to the list, not to the form's address.
      assert.doesNotMatch(bad.body, /name="back" value="\/dashboard\/partners\/new"/);
      const untouched = await client.get('/dashboard/partners');
      assert.match(untouched.body, /<details class="panel">\s*<summary>Add a partner/);
    });

    it('finds partners by part of the name or email, in any case, and by id', async () => {
      const wanted = (
        await env.request('POST', '/api/v1/partners', { body: { name: 'Zebra Media', email: 'z@zebra.example' } })
      ).body.id;
      await env.request('POST', '/api/v1/partners', { body: { name: 'Other 100%_', email: 'o@other.example' } });
      for (const q of ['zebra m', 'ZEBRA.EXAMPLE', wanted]) {
        const page = await client.get(`/dashboard/partners?q=${encodeURIComponent(q)}`);
        assert.match(page.body, /Zebra Media/, `"${q}" finds Zebra Media`);
        assert.doesNotMatch(page.body, /Other 100%_/, `"${q}" finds only Zebra Media`);
      }
      // LIKE's wildcards are taken literally.
      const literal = await client.get(`/dashboard/partners?q=${encodeURIComponent('%_')}`);
      assert.match(literal.body, /Other 100%_/);
      assert.doesNotMatch(literal.body, /Zebra Media/);
    });

    it('adds, edits, tests and deletes a partner postback URL', async () => {
      const partner = (await env.request('POST', '/api/v1/partners', { body: { name: 'Pb', email: 'pb@example.com' } }))
        .body.id;
      const base = `/dashboard/partners/${partner}`;
      const added = await client.post(`${base}/postbacks`, {
        url: `${receiver.url}?cid={conversion_id}&p={payout}`,
        events: ['conversion.approved'],
      });
      assert.equal(await followFlash(client, added), 'Postback URL added.');
      const [template] = (await env.request('GET', `/api/v1/partners/${partner}/postbacks`)).body.data;
      assert.deepEqual(template.events, ['conversion.approved']);

      const edited = await client.post(`${base}/postbacks/${template.id}`, {
        url: `${receiver.url}?cid={conversion_id}&s={status}`,
        events: ['conversion.created', 'conversion.approved'],
      });
      assert.equal(await followFlash(client, edited), 'Postback URL saved.');
      const [after] = (await env.request('GET', `/api/v1/partners/${partner}/postbacks`)).body.data;
      assert.equal(after.id, template.id);
      assert.equal(after.url, `${receiver.url}?cid={conversion_id}&s={status}`);
      assert.deepEqual(after.events, ['conversion.created', 'conversion.approved']);
      const editPage = await client.get(`${base}?edit=${template.id}`);
      assert.match(editPage.body, /Edit postback URL/);

      const tested = await client.post(`${base}/postbacks/${template.id}/test`);
      assert.match(await followFlash(client, tested), /: 200 in \d+ ms\. OK got it$/);
      assert.equal(receiver.received.length, 1);

      const refused = await client.post(`${base}/postbacks/${template.id}`, { url: 'ftp://x', events: [] });
      assert.equal(refused.status, 422);
      assert.match(refused.body, /Edit postback URL/);
      assert.match(refused.body, /action="[^"]+\/postbacks\/pbk_[^"]+"/, 'the form still saves the template edited');
      assert.match(refused.body, /id="url-error">must be an absolute http\(s\) URL/);
      assert.match(refused.body, /id="events-error">/);
      assert.doesNotMatch(refused.body, /must match pattern|\[Hh\]/, 'no regular expression');

      const deleted = await client.post(`${base}/postbacks/${template.id}/delete`);
      assert.equal(await followFlash(client, deleted), 'Postback URL deleted.');
      assert.deepEqual((await env.request('GET', `/api/v1/partners/${partner}/postbacks`)).body.data, []);
    });

    it('brings a refused postback URL back to its form, with the URL, offer and events chosen and each problem beside its field', async () => {
      const partner = (await env.request('POST', '/api/v1/partners', { body: { name: 'Pr', email: 'pr@example.com' } }))
        .body.id;
      const offer = (
        await env.request('POST', '/api/v1/offers', { body: { name: 'Chosen', destinationUrl: 'https://x.example/' } })
      ).body.id;
      const res = await client.post(`/dashboard/partners/${partner}/postbacks`, {
        url: 'notaurl {click_id}',
        offerId: offer,
        events: ['conversion.rejected'],
      });
      assert.equal(res.status, 422);
      assert.match(res.body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
      assert.match(res.body, /<a href="#url">Postback URL<\/a>: must be an absolute http\(s\) URL/);
      assert.match(
        res.body,
        /id="url"[^>]*value="notaurl \{click_id\}"[^>]*aria-invalid="true" aria-describedby="url-hint url-error"/,
      );
      assert.match(res.body, /id="url-error">must be an absolute http\(s\) URL/);
      assert.match(res.body, new RegExp(`<option value="${offer}" selected>Chosen</option>`));
      assert.match(res.body, /value="conversion\.rejected" checked/);
      assert.doesNotMatch(res.body, /value="conversion\.approved" checked/);
      assert.match(res.body, /Add a postback URL/);
      assert.deepEqual((await env.request('GET', `/api/v1/partners/${partner}/postbacks`)).body.data, []);
    });

    it("does not touch another brand's partner postbacks (404)", async () => {
      const other = await env.createBrand('Other brand');
      const theirs = (
        await env.request('POST', '/api/v1/partners', { body: { name: 'T', email: 't@x.example' }, key: other.apiKey })
      ).body.id;
      const res = await client.post(`/dashboard/partners/${theirs}/postbacks`, {
        url: receiver.url,
        events: ['conversion.created'],
      });
      assert.equal(res.status, 404);
    });

    it("shows an offer's pixel URL and rotates its token", async () => {
      const offer = (
        await env.request('POST', '/api/v1/offers', { body: { name: 'Pixel', destinationUrl: 'https://x.example/' } })
      ).body.id;
      const before = await client.get(`/dashboard/offers/${offer}`);
      assert.match(before.body, /No pixel URL yet/);
      await followFlash(client, await client.post(`/dashboard/offers/${offer}/pixel-token`));
      const first = /id="pixel-token" value="(pbt_[^"]+)"/.exec(
        (await client.get(`/dashboard/offers/${offer}`)).body,
      )?.[1];
      assert.ok(first, 'the token is shown');
      const shown = await client.get(`/dashboard/offers/${offer}`);
      assert.ok(shown.body.includes(`/postback?token=${first}&amp;click_id={click_id}`), 'the pixel URL is shown');
      await followFlash(client, await client.post(`/dashboard/offers/${offer}/pixel-token`));
      const second = /id="pixel-token" value="(pbt_[^"]+)"/.exec(
        (await client.get(`/dashboard/offers/${offer}`)).body,
      )?.[1];
      assert.ok(second && second !== first, 'rotating gives a new token');
      const old = await env.app.inject({ method: 'GET', url: `/postback?token=${first}&click_id=clk_x` });
      assert.equal(old.statusCode, 401, 'the old token is refused');
    });

    it("shows each API key's rate limit", async () => {
      const page = await client.get('/dashboard/settings/api-keys');
      assert.match(page.body, new RegExp(`>${env.ctx.config.rateLimitPerMinute}/min<`));
    });
  });
}
