import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { updatePostback } from '../../src/modules/postbacks/service.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

/** The rate limit's window: every test signs in afresh, past the previous test's attempts. */
const LOGIN_WINDOW_MS = 60_000;

function unescapeHtml(text: string): string {
  return text
    .replaceAll('&quot;', '"')
    .replaceAll('&#34;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

/**
 * What a browser posts for the edit form on `page` with `edits` typed in: the values the
 * form was loaded with (its hidden `_loaded` field), the edits over them, and the field itself.
 */
function editedForm(page: string, edits: Record<string, string | string[]>): Record<string, string | string[]> {
  const raw = /name="_loaded" value="([^"]*)"/.exec(page)?.[1];
  assert.ok(raw, 'the edit form carries the values it was loaded with');
  const loaded = JSON.parse(unescapeHtml(raw)) as Record<string, string | string[]>;
  return { ...loaded, ...edits, _loaded: unescapeHtml(raw) };
}

for (const dialect of testedDialects()) {
  describe(`dashboard edit forms change only what was changed (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    let brands = 0;
    let key: string;
    let brandId: string;
    let client: DashboardClient;
    const api = (method: string, url: string, options: Parameters<TestEnv['request']>[2] = {}) =>
      env.request(method, url, { key, ...options });
    beforeEach(async () => {
      const brand = await env.createBrand(`Edits ${++brands}`);
      key = brand.apiKey;
      brandId = brand.id;
      env.clock.advance(LOGIN_WINDOW_MS);
      client = await signedInClient(env, brand.id);
    });

    async function newOffer() {
      const body = {
        name: 'Hold 1d',
        destinationUrl: 'https://shop.example/',
        currency: 'USD',
        revenueCents: 2000,
        payoutCents: 0,
        holdSeconds: 86_400,
      };
      return (await api('POST', '/api/v1/offers', { body })).body.id as string;
    }

    it('keeps an offer paused, its payout and its cap when a teammate changed them while the form was open', async () => {
      const id = await newOffer();
      const page = await client.get(`/dashboard/offers/${id}`);
      const teammate = await api('PATCH', `/api/v1/offers/${id}`, {
        body: { status: 'paused', payoutCents: 999, caps: { daily: 5 }, holdSeconds: 7200 },
      });
      assert.equal(teammate.status, 200);
      const saved = await client.post(
        `/dashboard/offers/${id}`,
        editedForm(page.body, { name: 'Hold 1d (typo fixed)' }),
      );
      assert.equal(saved.status, 303);
      const offer = (await api('GET', `/api/v1/offers/${id}`)).body;
      assert.equal(offer.name, 'Hold 1d (typo fixed)');
      assert.equal(offer.status, 'paused');
      assert.equal(offer.payoutCents, 999);
      assert.equal(offer.caps.daily, 5);
      // The hold's number and unit are one value: the teammate's 2 hours, not "1" of the new unit.
      assert.equal(offer.holdSeconds, 7200);
    });

    it('saves what the marketer changed, over a teammate change of the same field too', async () => {
      const id = await newOffer();
      const page = await client.get(`/dashboard/offers/${id}`);
      await api('PATCH', `/api/v1/offers/${id}`, { body: { payoutCents: 999 } });
      const form = editedForm(page.body, { status: 'paused', payout: '4.50', capWeekly: '70' });
      const saved = await client.post(`/dashboard/offers/${id}`, form);
      assert.equal(saved.status, 303);
      const offer = (await api('GET', `/api/v1/offers/${id}`)).body;
      assert.deepEqual(
        [offer.name, offer.status, offer.payoutCents, offer.revenueCents, offer.caps.weekly, offer.holdSeconds],
        ['Hold 1d', 'paused', 450, 2000, 70, 86_400],
      );
    });

    it('renames an offer stored in a withdrawn currency (HRK) without asking for a new currency', async () => {
      const id = await newOffer();
      // Stored before HRK left ISO 4217's list (Croatia took the euro in 2023): input refuses it now.
      await env.ctx.db.transact((trx) =>
        trx.updateTable('offers').set({ currency: 'HRK' }).where('id', '=', id).execute(),
      );
      const page = await client.get(`/dashboard/offers/${id}`);
      const saved = await client.post(`/dashboard/offers/${id}`, editedForm(page.body, { name: 'Kuna offer' }));
      assert.equal(saved.status, 303);
      const offer = (await api('GET', `/api/v1/offers/${id}`)).body;
      assert.deepEqual(
        [offer.name, offer.currency, offer.revenueCents, offer.holdSeconds],
        ['Kuna offer', 'HRK', 2000, 86_400],
      );
      // Changing the currency itself still meets the rule: HRK cannot be chosen again.
      const back = await client.get(`/dashboard/offers/${id}`);
      const refused = await client.post(`/dashboard/offers/${id}`, editedForm(back.body, { currency: 'HRKX' }));
      assert.equal(refused.status, 422);
    });

    it('keeps a postback URL’s events and offer changed meanwhile when only its URL is edited', async () => {
      const partnerId = (await api('POST', '/api/v1/partners', { body: { name: 'Pb', email: 'pb@example.com' } })).body
        .id as string;
      const offerId = await newOffer();
      const created = await api('POST', `/api/v1/partners/${partnerId}/postbacks`, {
        body: { url: 'https://pb.example/a?c={conversion_id}', events: ['conversion.approved'] },
      });
      assert.equal(created.status, 201);
      const pbId = created.body.id as string;
      const page = await client.get(`/dashboard/partners/${partnerId}?edit=${pbId}`);
      // A teammate's save in another tab (the API has no PATCH for postbacks).
      await updatePostback(env.ctx, brandId, partnerId, pbId, {
        url: 'https://pb.example/a?c={conversion_id}',
        offerId,
        events: ['conversion.created'],
      });
      const saved = await client.post(
        `/dashboard/partners/${partnerId}/postbacks/${pbId}`,
        editedForm(page.body, { url: 'https://pb.example/b?c={conversion_id}' }),
      );
      assert.equal(saved.status, 303);
      const after = (await api('GET', `/api/v1/partners/${partnerId}/postbacks`)).body.data[0];
      assert.deepEqual(
        [after.url, after.offerId, after.events],
        ['https://pb.example/b?c={conversion_id}', offerId, ['conversion.created']],
      );
    });

    it('keeps a subscription disabled meanwhile when only its URL is edited', async () => {
      const body = { url: 'http://127.0.0.1:9/in', events: ['partner.applied'] };
      const sub = (await api('POST', '/api/public/webhooks', { body })).body;
      const page = await client.get(`/dashboard/webhooks/${sub.id}`);
      await api('PATCH', `/api/public/webhooks/${sub.id}`, { body: { status: 'disabled' } });
      const saved = await client.post(
        `/dashboard/webhooks/${sub.id}`,
        editedForm(page.body, { url: 'http://127.0.0.1:9/v2' }),
      );
      assert.equal(saved.status, 303);
      const after = (await api('GET', `/api/public/webhooks/${sub.id}`)).body;
      assert.equal(after.url, 'http://127.0.0.1:9/v2');
      assert.equal(after.status, 'disabled');
      assert.deepEqual(after.events, ['partner.applied']);
    });

    it('keeps a fraud threshold and an auto-ban rule set meanwhile when the brand name is saved', async () => {
      const page = await client.get('/dashboard/settings');
      const patched = await api('PATCH', '/api/v1/brand', {
        body: { fraudThreshold: 40, autoBan: { highRiskClicks: 3, windowMinutes: 15 } },
      });
      assert.equal(patched.status, 200);
      const saved = await client.post('/dashboard/settings', editedForm(page.body, { name: 'Renamed brand' }));
      assert.equal(saved.status, 303);
      const brand = (await api('GET', '/api/v1/brand')).body;
      assert.deepEqual(
        [brand.name, brand.fraudThreshold, brand.autoBan],
        ['Renamed brand', 40, { highRiskClicks: 3, windowMinutes: 15 }],
      );
    });

    it('turns an auto-ban rule off when the marketer unticks it', async () => {
      await api('PATCH', '/api/v1/brand', { body: { autoBan: { highRiskClicks: 3, windowMinutes: 15 } } });
      const page = await client.get('/dashboard/settings');
      const form = editedForm(page.body, {});
      delete form.autoBanEnabled;
      const saved = await client.post('/dashboard/settings', form);
      assert.equal(saved.status, 303);
      assert.equal((await api('GET', '/api/v1/brand')).body.autoBan, null);
    });
  });
}
