import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestBrand, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

for (const dialect of testedDialects()) {
  describe(`dashboard brand isolation and escaping (${dialect})`, () => {
    let env: TestEnv;
    let other: TestBrand;
    let client: DashboardClient;
    const theirs: Record<string, string> = {};

    before(async () => {
      env = await createTestEnv(dialect);
      other = await env.createBrand('Other Brand');
      const key = other.apiKey;
      const offer = await env.request('POST', '/api/v1/offers', {
        key,
        body: { name: 'Their offer', destinationUrl: 'https://b.example/' },
      });
      const partner = await env.request('POST', '/api/v1/partners', {
        key,
        body: { name: 'Their partner', email: 'p@b.example' },
      });
      const applicant = await env.app.inject({
        method: 'POST',
        url: '/api/public/partners/apply',
        payload: { brandSlug: other.slug, name: 'Their applicant', email: 'a@b.example' },
      });
      const conversion = await env.request('POST', '/api/v1/conversions', {
        key,
        body: { offerId: offer.body.id, partnerId: partner.body.id },
      });
      const subscription = await env.request('POST', '/api/public/webhooks', {
        key,
        body: { url: 'http://127.0.0.1:9/hook', events: ['partner.approved'] },
      });
      await env.request('POST', '/api/v1/partners', { key, body: { name: 'Another', email: 'x@b.example' } });
      const delivery = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('brand_id', '=', other.id)
        .executeTakeFirstOrThrow();
      const blocked = await env.request('POST', '/api/v1/fraud/blocklist', {
        key,
        body: { type: 'ip', value: '203.0.113.9' },
      });
      Object.assign(theirs, {
        offer: offer.body.id,
        partner: partner.body.id,
        applicant: applicant.json().id,
        conversion: conversion.body.id,
        subscription: subscription.body.id,
        delivery: delivery.id,
        blocklist: blocked.body.id,
        key: other.keyId,
      });
      client = await signedInClient(env);
    });
    after(() => env.close());

    it("answers 404 for another brand's pages", async () => {
      for (const url of [
        `/dashboard/offers/${theirs.offer}`,
        `/dashboard/partners/${theirs.partner}`,
        `/dashboard/conversions/${theirs.conversion}`,
        `/dashboard/webhooks/${theirs.subscription}`,
        `/dashboard/deliveries/${theirs.delivery}`,
      ]) {
        const res = await client.get(url);
        assert.equal(res.status, 404, url);
        assert.match(String(res.headers['content-type']), /^text\/html/);
      }
    });

    it("answers 404 to actions on another brand's resources, and changes nothing", async () => {
      const actions: Array<[string, Record<string, string | string[]>]> = [
        [
          `/dashboard/offers/${theirs.offer}`,
          { name: 'Hijacked', destinationUrl: 'https://evil.example/', status: 'paused' },
        ],
        [`/dashboard/partners/${theirs.applicant}/approve`, {}],
        [`/dashboard/partners/${theirs.partner}/ban`, { reason: 'x' }],
        [`/dashboard/conversions/${theirs.conversion}/approve`, {}],
        [`/dashboard/conversions/${theirs.conversion}/reject`, {}],
        ['/dashboard/conversions/bulk', { approve: theirs.conversion! }],
        [
          `/dashboard/webhooks/${theirs.subscription}`,
          { url: 'https://evil.example/', events: 'partner.approved', status: 'disabled' },
        ],
        [`/dashboard/webhooks/${theirs.subscription}/status`, { status: 'disabled' }],
        [`/dashboard/webhooks/${theirs.subscription}/delete`, {}],
        [`/dashboard/deliveries/${theirs.delivery}/redeliver`, {}],
        [`/dashboard/settings/api-keys/${theirs.key}/revoke`, {}],
        [`/dashboard/settings/blocklist/${theirs.blocklist}/delete`, {}],
      ];
      for (const [url, fields] of actions) {
        assert.equal((await client.post(url, fields)).status, 404, url);
      }
      const key = other.apiKey;
      assert.equal((await env.request('GET', `/api/v1/offers/${theirs.offer}`, { key })).body.name, 'Their offer');
      assert.equal(
        (await env.request('GET', `/api/v1/partners/${theirs.applicant}`, { key })).body.status,
        'applicant',
      );
      assert.equal((await env.request('GET', `/api/v1/partners/${theirs.partner}`, { key })).body.status, 'active');
      assert.equal(
        (await env.request('GET', `/api/v1/conversions/${theirs.conversion}`, { key })).body.status,
        'pending',
      );
      assert.equal(
        (await env.request('GET', `/api/public/webhooks/${theirs.subscription}`, { key })).body.status,
        'active',
      );
      assert.equal((await env.request('GET', '/api/v1/brand', { key })).status, 200);
      assert.equal((await env.request('GET', '/api/v1/fraud/blocklist', { key })).body.data.length, 1);
    });

    it("lists only the session brand's data", async () => {
      for (const url of [
        '/dashboard/offers',
        '/dashboard/partners',
        '/dashboard/conversions',
        '/dashboard/webhooks',
        '/dashboard/deliveries',
        '/dashboard/settings/blocklist',
        '/dashboard/reports',
      ]) {
        const res = await client.get(url);
        assert.equal(res.status, 200, url);
        for (const id of Object.values(theirs)) assert.equal(res.body.includes(id), false, `${url} shows ${id}`);
        assert.equal(res.body.includes('Their offer'), false, url);
      }
    });

    it('escapes everything a partner or receiver controls', async () => {
      const evil = '<script>alert(1)</script>"\'&';
      const applied = await env.app.inject({
        method: 'POST',
        url: '/api/public/partners/apply',
        payload: { brandSlug: env.brand.slug, name: evil, email: 'evil@example.com' },
      });
      const partners = await client.get('/dashboard/partners?status=applicant');
      assert.equal(partners.body.includes('<script>alert'), false);
      // kitajs escapes & < " ' (a > cannot open a tag, so it needs no escaping).
      assert.match(partners.body, /&lt;script>alert\(1\)&lt;\/script>&#34;&#39;&amp;/);
      const detail = await client.get(`/dashboard/partners/${applied.json().id}`);
      assert.equal(detail.body.includes('<script>alert'), false);
    });

    it('serves its script and stylesheet itself, cacheable by content hash', async () => {
      const page = await client.get('/dashboard');
      const assets = [...page.body.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      assert.equal(assets.length, 3);
      for (const url of assets) {
        const res = await client.get(url.replaceAll('&amp;', '&'));
        assert.equal(res.status, 200, url);
        assert.match(String(res.headers['cache-control']), /immutable/);
      }
      assert.doesNotMatch(page.body, /<script>|style="|https?:\/\/(?!localhost)[^"']*\.(js|css)/);
    });

    it('answers 404 for asset names that are not files, Object.prototype members included', async () => {
      for (const name of ['nope.js', '__proto__', 'constructor', 'toString']) {
        assert.equal((await client.get(`/dashboard/assets/${name}`)).status, 404, name);
      }
    });

    it('answers unknown dashboard paths with an HTML 404 page', async () => {
      const res = await client.get('/dashboard/no-such-page');
      assert.equal(res.status, 404);
      assert.match(res.body, /<h1>Not found<\/h1>/);
    });
  });
}
