/**
 * Forms whose answer shows a new secret once are answered directly (no redirect), so a
 * reload, or Back and Forward, posts them again: their one-time form id makes the repeat
 * create nothing (web/sentOnce.tsx).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv } from '../payouts/http.js';
import { invitedPartner } from '../portal/client.js';
import { type DashboardClient, signedInClient } from './client.js';

const formIdOf = (html: string) => {
  const id = /name="formId" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(id, 'the form carries a one-time id');
  return id;
};

for (const dialect of testedDialects()) {
  describe(`forms that show a secret once, posted twice (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect);
      client = await signedInClient(env);
    });
    after(() => env.close());

    it('creates one API key when the create form is posted twice', async () => {
      const formId = formIdOf((await client.get('/dashboard/settings/api-keys')).body);
      const first = await client.post('/dashboard/settings/api-keys', { name: 'reloaded', formId });
      assert.equal(first.status, 200);
      assert.match(first.body, /value="afk_/, 'the first answer shows the key');
      const again = await client.post('/dashboard/settings/api-keys', { name: 'reloaded', formId });
      assert.equal(again.status, 303);
      const list = await client.get(again.location as string);
      assert.match(list.body, /This form was sent already/);
      assert.doesNotMatch(list.body, /value="afk_/, 'no secret on the repeat');
      const keys = await env.ctx.db.read
        .selectFrom('api_keys')
        .select('id')
        .where('brand_id', '=', env.brand.id)
        .where('name', '=', 'reloaded')
        .execute();
      assert.equal(keys.length, 1);
    });

    it('creates one webhook subscription when the create form is posted twice, and a fresh form creates another', async () => {
      const fields = (formId: string) => ({ url: 'https://hooks.example/once', events: ['cap.reached'], formId });
      const formId = formIdOf((await client.get('/dashboard/webhooks/new')).body);
      assert.match((await client.post('/dashboard/webhooks', fields(formId))).body, /whsec_/);
      const again = await client.post('/dashboard/webhooks', fields(formId));
      assert.equal(again.status, 303);
      assert.match((await client.get(again.location as string)).body, /This form was sent already/);
      const count = async () => (await env.request('GET', '/api/public/webhooks')).body.data.length;
      assert.equal(await count(), 1);
      const fresh = formIdOf((await client.get('/dashboard/webhooks/new')).body);
      assert.notEqual(fresh, formId);
      assert.match((await client.post('/dashboard/webhooks', fields(fresh))).body, /whsec_/);
      assert.equal(await count(), 2);
    });

    it("rotates a subscription's secret once when the rotate answer is reloaded, so the original secret keeps signing", async () => {
      const created = await client.post('/dashboard/webhooks', {
        url: 'https://hooks.example/rotate',
        events: ['cap.reached'],
        formId: formIdOf((await client.get('/dashboard/webhooks/new')).body),
      });
      const original = /value="(whsec_[^"]+)"/.exec(created.body)?.[1];
      const id = /href="\/dashboard\/webhooks\/(sub_[^"]+)"/.exec(created.body)?.[1];
      assert.ok(original && id);
      const secrets = () =>
        env.ctx.db.read
          .selectFrom('webhook_subscriptions')
          .select(['secret', 'previous_secret'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      const rotateForm = /action="\/dashboard\/webhooks\/[^"]+\/rotate"[\s\S]*?<\/form>/.exec(
        (await client.get(`/dashboard/webhooks/${id}`)).body,
      )?.[0];
      const formId = formIdOf(rotateForm ?? '');
      const first = await client.post(`/dashboard/webhooks/${id}/rotate`, { formId });
      assert.equal(first.status, 200);
      const shown = /value="(whsec_[^"]+)"/.exec(first.body)?.[1];
      assert.deepEqual(await secrets(), { secret: shown, previous_secret: original });
      const again = await client.post(`/dashboard/webhooks/${id}/rotate`, { formId });
      assert.equal(again.status, 303);
      assert.match((await client.get(again.location as string)).body, /This form was sent already/);
      assert.deepEqual(await secrets(), { secret: shown, previous_secret: original }, 'no second rotation');

      // The edit form's "Generate a new secret" answers with the secret too.
      const editId = formIdOf((await client.get(`/dashboard/webhooks/${id}`)).body);
      const edit = {
        url: 'https://hooks.example/rotate',
        events: ['cap.reached'],
        status: 'active',
        rotateSecret: '1',
      };
      const saved = await client.post(`/dashboard/webhooks/${id}`, { ...edit, formId: editId });
      const third = /value="(whsec_[^"]+)"/.exec(saved.body)?.[1];
      assert.deepEqual(await secrets(), { secret: third, previous_secret: shown });
      const resaved = await client.post(`/dashboard/webhooks/${id}`, { ...edit, formId: editId });
      assert.equal(resaved.status, 303);
      assert.deepEqual(await secrets(), { secret: third, previous_secret: shown }, 'no rotation on the repeat');
    });

    it('creates one portal invite when the invite answer is reloaded, so the link shown keeps working', async () => {
      const partner = await env.request('POST', '/api/v1/partners', {
        body: { name: 'Invited Twice', email: 'twice@partners.example' },
      });
      const page = `/dashboard/partners/${partner.body.id}`;
      const inviteForm = /action="[^"]+\/invite"[\s\S]*?<\/form>/.exec((await client.get(page)).body)?.[0];
      const formId = formIdOf(inviteForm ?? '');
      const first = await client.post(`${page}/invite`, { formId });
      assert.equal(first.status, 201);
      const link = /value="https?:\/\/[^/"]+(\/portal\/invite\?token=[^"]+)"/.exec(first.body)?.[1];
      assert.ok(link, 'the first answer shows the link');
      const again = await client.post(`${page}/invite`, { formId });
      assert.equal(again.status, 303);
      assert.match((await client.get(again.location as string)).body, /This form was sent already/);
      const opened = await env.app.inject({ method: 'GET', url: link.replaceAll('&amp;', '&') });
      assert.equal(opened.statusCode, 200, 'the link shown first still opens');
    });
  });

  describe(`the portal's API key form posted twice (${dialect})`, () => {
    let env: HttpEnv;
    before(async () => {
      env = await createHttpEnv(dialect);
    });
    after(() => env.close());

    it('creates one partner key', async () => {
      const { client, partnerId } = await invitedPartner(env, 'Reloader');
      const formId = formIdOf((await client.get('/portal/api-keys')).body);
      assert.match((await client.post('/portal/api-keys', { name: 'script', formId })).body, /value="afp_/);
      const again = await client.post('/portal/api-keys', { name: 'script', formId });
      assert.equal(again.status, 303);
      const keys = await env.ctx.db.read
        .selectFrom('partner_api_keys')
        .select('id')
        .where('partner_id', '=', partnerId)
        .execute();
      assert.equal(keys.length, 1);
    });
  });
}
