import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

const OFFER_FORM = {
  name: 'Summer',
  destinationUrl: 'https://shop.example/?c={click_id}',
  status: 'active',
  currency: 'EUR',
  revenue: '19.99',
  payout: '5',
  conversionStatus: 'pending',
  holdValue: '3',
  holdUnit: 'days',
  capDaily: '',
  capWeekly: '50',
  capMonthly: '',
  capGlobal: '',
  fallbackUrl: '',
};

/** The rate limit's window; the test clock stays on 2026-11-21 through every sign-in of the file. */
const LOGIN_WINDOW_MS = 60_000;

/** The text of the flash message the page shows after a redirect. */
async function followFlash(client: DashboardClient, res: { status: number; location: string | undefined }) {
  assert.equal(res.status, 303);
  const page = await client.get(res.location!);
  return /class="flash (?:ok|error)" role="(?:status|alert)">([^<]*)</.exec(page.body)?.[1] ?? '';
}

for (const dialect of testedDialects()) {
  describe(`dashboard pages (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    // Each test works in a brand of its own (its own offers, conversions, subscriptions and
    // settings), so it passes alone and in any order.
    let brands = 0;
    let key: string;
    let client: DashboardClient;
    let partnerId: string;
    const api = (method: string, url: string, options: Parameters<TestEnv['request']>[2] = {}) =>
      env.request(method, url, { key, ...options });
    beforeEach(async () => {
      const brand = await env.createBrand(`Pages ${++brands}`);
      key = brand.apiKey;
      // Past the login limit's window (per address, per minute): every test signs in afresh.
      env.clock.advance(LOGIN_WINDOW_MS);
      client = await signedInClient(env, brand.id);
      partnerId = (await api('POST', '/api/v1/partners', { body: { name: 'Pat', email: 'pat@example.com' } })).body.id;
    });

    it('creates an offer from the form through the offer service', async () => {
      const res = await client.post('/dashboard/offers', OFFER_FORM);
      assert.equal(await followFlash(client, res), 'Offer “Summer” created.');
      const id = res.location!.split('/').pop()!;
      const offer = (await api('GET', `/api/v1/offers/${id}`)).body;
      assert.equal(offer.revenueCents, 1999);
      assert.equal(offer.payoutCents, 500);
      assert.equal(offer.currency, 'EUR');
      assert.equal(offer.holdSeconds, 3 * 86_400);
      assert.deepEqual(offer.caps, { daily: null, weekly: 50, monthly: null, global: null });
      const page = await client.get(`/dashboard/offers/${id}`);
      assert.match(page.body, /value="19\.99"/);
      // One "Tracking links" region (the table), not a region of that name inside another.
      assert.equal(page.body.match(/aria-label="Tracking links"|aria-labelledby="links-h"/g)?.length, 1);
      assert.match(page.body, new RegExp(`value="${env.ctx.config.publicUrl}/t/${id}/${partnerId}"`));
    });

    it('shows every problem next to its field and keeps what was typed (422)', async () => {
      const res = await client.post('/dashboard/offers', {
        ...OFFER_FORM,
        name: '',
        revenue: '12.345',
        capDaily: '-1',
        status: 'deleted',
        destinationUrl: 'typed-value',
      });
      assert.equal(res.status, 422);
      assert.match(res.body, /<p class="field-error" id="name-error">is required<\/p>/);
      assert.match(res.body, /id="revenue-error">must be an amount such as 12\.50/);
      assert.match(res.body, /id="capDaily-error">must be a whole number/);
      assert.match(res.body, /id="status-error">is not one of the allowed values/);
      assert.match(res.body, /aria-invalid="true" aria-describedby="revenue-hint revenue-error"/);
      assert.match(res.body, /value="typed-value"/);
      assert.match(res.body, /value="12\.345"/);
      // The summary lists the problems in the form's order, Name first.
      const summary = /id="error-summary"[\s\S]*?<\/ul>/.exec(res.body)?.[0] ?? '';
      const listed = [...summary.matchAll(/<a href="#(\w+)"/g)].map((m) => m[1]);
      assert.deepEqual(listed, ['name', 'destinationUrl', 'status', 'revenue', 'capDaily'], summary);
      // The service's own rule (absolute http URL) comes back the same way once the schema passes.
      const second = await client.post('/dashboard/offers', { ...OFFER_FORM, destinationUrl: 'typed-value' });
      assert.equal(second.status, 422);
      assert.match(second.body, /id="destinationUrl-error">must be an absolute http\(s\) URL/);
    });

    it("lists a macro in the destination host with the form's other problems, in one answer", async () => {
      const res = await client.post('/dashboard/offers', {
        ...OFFER_FORM,
        destinationUrl: 'https://{sub1}.evil.example/x',
        revenue: '12.345',
        capDaily: '0',
        fallbackUrl: 'notaurl',
      });
      assert.equal(res.status, 422);
      for (const field of ['destinationUrl', 'revenue', 'capDaily', 'fallbackUrl']) {
        assert.match(res.body, new RegExp(`id="${field}-error">`), `${field} has its problem beside it`);
      }
      assert.match(res.body, /id="destinationUrl-error">[^<]*macros in the path and query only</);
    });

    it('pages through lists with Next and First page links', async () => {
      for (let i = 0; i < 28; i++) {
        await api('POST', '/api/v1/offers', {
          body: { name: `Bulk ${String(i).padStart(2, '0')}`, destinationUrl: 'https://x.example/' },
        });
      }
      const first = await client.get('/dashboard/offers');
      const next = /href="(\/dashboard\/offers\?cursor=[^"]+)" rel="next"/.exec(first.body)?.[1];
      assert.ok(next);
      assert.equal((first.body.match(/<th scope="row"[ >]/g) ?? []).length, 25);
      assert.doesNotMatch(first.body, /First page/);
      const second = await client.get(next);
      assert.equal((second.body.match(/<th scope="row"[ >]/g) ?? []).length, 3);
      assert.match(second.body, /First page/);
      assert.match(second.body, /Last page/);
    });

    it('approves conversions in bulk and reports the ones that could not be', async () => {
      const offerId = (
        await api('POST', '/api/v1/offers', {
          body: { name: 'Bulk offer', destinationUrl: 'https://x.example/' },
        })
      ).body.id;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await api('POST', '/api/v1/conversions', { body: { offerId, partnerId } })).body.id);
      }
      await api('POST', `/api/v1/conversions/${ids[0]}/reject`);
      const list = await client.get(`/dashboard/conversions?offerId=${offerId}&status=pending`);
      assert.match(list.body, /data-select-all/);
      const res = await client.post('/dashboard/conversions/bulk', {
        action: 'approve',
        ids,
        back: `/dashboard/conversions?offerId=${offerId}`,
      });
      assert.equal(res.location, `/dashboard/conversions?offerId=${offerId}`);
      const text = await followFlash(client, res);
      assert.match(text, /^2 conversions approved; 1 conversion could not be approved\./);
      assert.match(text, new RegExp(`${ids[0]}: Only pending conversions can be approved; this one is rejected\\.`));
      for (const id of ids.slice(1))
        assert.equal((await api('GET', `/api/v1/conversions/${id}`)).body.status, 'approved');
      const none = await client.post('/dashboard/conversions/bulk', { action: 'reject' });
      assert.equal(await followFlash(client, none), 'Select at least one conversion first.');
    });

    it('answers an over-long ban or reject reason with 422, the reason as typed and the problem beside it', async () => {
      const long = 'r'.repeat(501);
      const ban = await client.post(`/dashboard/partners/${partnerId}/ban`, {
        reason: long,
        back: '/dashboard/partners',
      });
      assert.equal(ban.status, 422);
      assert.match(
        ban.body,
        new RegExp(`id="reason" name="reason" type="text" value="${long}"[^>]*aria-invalid="true"`),
      );
      assert.match(ban.body, /<p class="field-error" id="reason-error">must NOT have more than 500 characters<\/p>/);
      assert.match(ban.body, /role="alert" id="error-summary"[^>]*autofocus/);
      assert.match(ban.body, /<input type="hidden" name="back" value="\/dashboard\/partners"\/>/);
      assert.equal((await api('GET', `/api/v1/partners/${partnerId}`)).body.status, 'active', 'not banned');
      const offerId = (
        await api('POST', '/api/v1/offers', { body: { name: 'Reasons', destinationUrl: 'https://x.example/' } })
      ).body.id;
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        ids.push((await api('POST', '/api/v1/conversions', { body: { offerId, partnerId } })).body.id);
      }
      const one = await client.post(`/dashboard/conversions/${ids[0]}/reject`, { reason: long });
      assert.equal(one.status, 422);
      assert.match(one.body, /id="reason-error">must NOT have more than 500 characters/);
      assert.match(one.body, new RegExp(`action="/dashboard/conversions/${ids[0]}/reject"`));
      const bulk = await client.post('/dashboard/conversions/bulk', {
        action: 'reject',
        ids,
        reason: long,
        back: '/dashboard/conversions',
      });
      assert.equal(bulk.status, 422);
      assert.match(bulk.body, /<h1>Reject 2 conversions<\/h1>/);
      assert.match(bulk.body, /id="reason-error">must NOT have more than 500 characters/);
      for (const id of ids) {
        assert.match(bulk.body, new RegExp(`<input type="hidden" name="ids" value="${id}"/>`));
        assert.equal((await api('GET', `/api/v1/conversions/${id}`)).body.status, 'pending', 'nothing rejected');
      }
      // The page's form, sent again with a shorter reason, does what was asked.
      const again = await client.post('/dashboard/conversions/bulk', {
        action: 'reject',
        ids,
        reason: 'duplicate orders',
        back: '/dashboard/conversions',
      });
      assert.equal(await followFlash(client, again), '2 conversions rejected.');
      // Another brand's partner is still a 404, not a form to ban it.
      const missing = await client.post('/dashboard/partners/prt_nope/ban', { reason: long });
      assert.equal(missing.status, 404);
    });

    it('filters conversions by brand-local day', async () => {
      const offerId = (
        await api('POST', '/api/v1/offers', { body: { name: 'Day', destinationUrl: 'https://x.example/' } })
      ).body.id;
      assert.equal((await api('POST', '/api/v1/conversions', { body: { offerId, partnerId } })).status, 201);
      const inRange = await client.get('/dashboard/conversions?from=2026-11-21&to=2026-11-21');
      assert.match(inRange.body, /conv_/);
      const outOfRange = await client.get('/dashboard/conversions?from=2026-11-22');
      assert.match(outOfRange.body, /No conversions match these filters/);
      // A day the calendar lacks is refused beside its field (422), not ignored with a message.
      const bad = await client.get('/dashboard/conversions?from=2026-02-30&to=2026-11-21');
      assert.equal(bad.status, 422);
      assert.match(bad.body, /id="from" name="from" type="date" value="2026-02-30" aria-invalid="true"/);
      assert.match(bad.body, /<p class="field-error" id="from-error">is not a calendar date<\/p>/);
      assert.match(bad.body, /role="alert" id="error-summary"/);
      assert.doesNotMatch(bad.body, /conv_|export\.csv/, 'no list or export for a refused day');
      const badCsv = await client.get('/dashboard/conversions/export.csv?to=2026-02-31');
      assert.equal(badCsv.status, 422);
      assert.match(badCsv.body, /to: is not a calendar date/);
    });

    it('refuses a reversed range on the conversions list and its CSV (422), as the reports and the API do', async () => {
      const offerId = (
        await api('POST', '/api/v1/offers', { body: { name: 'Range', destinationUrl: 'https://x.example/' } })
      ).body.id;
      assert.equal((await api('POST', '/api/v1/conversions', { body: { offerId, partnerId } })).status, 201);
      const page = await client.get('/dashboard/conversions?from=2026-11-22&to=2026-11-20');
      assert.equal(page.status, 422);
      assert.match(page.body, /<p class="field-error" id="from-error">must not be after to<\/p>/);
      assert.doesNotMatch(
        page.body,
        /No conversions match|No matching conversions|conv_/,
        'no list for a refused range',
      );
      assert.match(page.body, /id="from" name="from" type="date" value="2026-11-22"/, 'the typed days stay');
      assert.doesNotMatch(page.body, /export\.csv/, 'no export of a refused range');
      const csv = await client.get('/dashboard/conversions/export.csv?from=2026-11-22&to=2026-11-20');
      assert.equal(csv.status, 422);
      assert.match(csv.headers['content-type'] as string, /^text\/html/);
      assert.match(csv.body, /from: must not be after to/);
      // One day (from = to) is a range, not a reversed one.
      const oneDay = await client.get('/dashboard/conversions?from=2026-11-21&to=2026-11-21');
      assert.equal(oneDay.status, 200);
      assert.match(oneDay.body, /conv_/);
    });

    it('exports the report as CSV with a file name, guarding against spreadsheet formulas', async () => {
      const formula = await api('POST', '/api/v1/partners', {
        body: { name: '=HYPERLINK("x")', email: 'f@example.com' },
      });
      const offer = (
        await api('POST', '/api/v1/offers', { body: { name: 'CSV', destinationUrl: 'https://x.example/' } })
      ).body;
      await api('POST', '/api/v1/conversions', { body: { offerId: offer.id, partnerId: formula.body.id } });
      const res = await client.get(
        '/dashboard/reports/export.csv?from=2026-11-01&to=2026-11-21&time=day&by=offer&by=partner',
      );
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
      assert.equal(
        res.headers['content-disposition'],
        'attachment; filename="affitrack-report-2026-11-01-to-2026-11-21.csv"',
      );
      const [header, ...rows] = res.body.trim().split('\r\n');
      assert.equal(
        header,
        'day,offer_id,offer_name,partner_id,partner_name,clicks,conversions,approved,pending,rejected,revenue,payout,profit,conversion_rate,epc,currency',
      );
      assert.ok(rows.length > 0);
      assert.match(rows[0]!, /^2026-11-21,off_/);
      assert.ok(
        rows.some((row) => row.includes(`${formula.body.id},"'=HYPERLINK(""x"")",0,1,0,1,0,`)),
        res.body,
      );
      const bad = await client.get('/dashboard/reports?from=2026-11-30&to=2026-11-01&time=day');
      assert.equal(bad.status, 422);
      assert.match(bad.body, /id="from-error">must not be after to/);
      // The day after 9999-12-31 sorts before it as text: the chart's days are counted instead.
      const lastDays = await client.get('/dashboard/reports?from=9999-12-30&to=9999-12-31&time=day');
      assert.equal(lastDays.status, 200);
      assert.match(lastDays.body, /2 bars per series/);
    });

    it('creates a subscription with a generated secret shown once, and edits it', async () => {
      const missing = await client.post('/dashboard/webhooks', { url: 'ftp://x' });
      assert.equal(missing.status, 422);
      assert.match(missing.body, /id="url-error">must be an absolute http\(s\) URL/);
      assert.match(missing.body, /choose at least one event/);
      const res = await client.post('/dashboard/webhooks', {
        url: 'http://127.0.0.1:9/in',
        events: ['partner.applied', 'fraud.high_risk'],
      });
      assert.equal(res.status, 200);
      const secret = /id="new-secret" value="(whsec_[\w-]+)"/.exec(res.body)?.[1];
      assert.ok(secret);
      const [sub] = (await api('GET', '/api/public/webhooks')).body.data;
      assert.deepEqual(sub.events, ['partner.applied', 'fraud.high_risk']);
      const stored = await env.ctx.db.read
        .selectFrom('webhook_subscriptions')
        .select('secret')
        .where('id', '=', sub.id)
        .executeTakeFirstOrThrow();
      assert.equal(stored.secret, secret);
      const edit = await client.get(`/dashboard/webhooks/${sub.id}`);
      assert.doesNotMatch(edit.body, new RegExp(secret));
      const saved = await client.post(`/dashboard/webhooks/${sub.id}`, {
        url: 'http://127.0.0.1:9/v2',
        events: 'partner.applied',
        status: 'disabled',
      });
      assert.equal(await followFlash(client, saved), 'Subscription saved.');
      const after = (await api('GET', `/api/public/webhooks/${sub.id}`)).body;
      assert.equal(after.url, 'http://127.0.0.1:9/v2');
      assert.equal(after.status, 'disabled');
      const rotated = await client.post(`/dashboard/webhooks/${sub.id}`, {
        url: after.url,
        events: 'partner.applied',
        status: 'active',
        rotateSecret: '1',
      });
      const newSecret = /id="new-secret" value="(whsec_[\w-]+)"/.exec(rotated.body)?.[1];
      assert.ok(newSecret && newSecret !== secret);
      const deleted = await client.post(`/dashboard/webhooks/${sub.id}/delete`);
      assert.equal(await followFlash(client, deleted), 'Subscription deleted.');
    });

    it('answers a refused Recover form with 422, the days as typed and the problem beside its field', async () => {
      const body = { url: 'http://127.0.0.1:9/in', events: ['partner.applied'] };
      const sub = (await api('POST', '/api/public/webhooks', { body })).body;
      await client.get(`/dashboard/webhooks/${sub.id}`);
      const reversed = await client.post(`/dashboard/webhooks/${sub.id}/recover`, {
        from: '2026-11-20',
        to: '2026-11-01',
        dryRun: '1',
      });
      assert.equal(reversed.status, 422);
      assert.match(reversed.body, /id="recover-from"[^>]*value="2026-11-20"/);
      assert.match(reversed.body, /id="recover-to"[^>]*value="2026-11-01"[^>]*aria-invalid="true"/);
      assert.match(reversed.body, /id="recover-to-error">is before the first day/);
      assert.match(reversed.body, /id="recover-dry"[^>]*checked/);
      assert.doesNotMatch(reversed.body, /Validation failed|must be after since/);
      const impossible = await client.post(`/dashboard/webhooks/${sub.id}/recover`, { from: '2026-02-30', to: '' });
      assert.equal(impossible.status, 422);
      assert.match(impossible.body, /id="recover-from-error">is not a day of the calendar</);
      assert.match(impossible.body, /<a href="#recover-from">Created from<\/a>: is not a day of the calendar/);
      // A good range still goes through the service and back to the page with the count.
      const counted = await client.post(`/dashboard/webhooks/${sub.id}/recover`, { from: '2026-11-01', dryRun: '1' });
      assert.equal(await followFlash(client, counted), '0 failed deliveries would be sent again.');
    });

    it('shows an offer without traffic in its own currency (€0.00), on the list and on its page', async () => {
      const body = { name: 'Euro only', destinationUrl: 'https://shop.example/', currency: 'EUR', payoutCents: 920 };
      const id = (await api('POST', '/api/v1/offers', { body })).body.id;
      const list = await client.get('/dashboard/offers');
      const row = list.body.split('<tr').find((r) => r.includes(id)) ?? '';
      assert.match(row, /€0\.00/);
      assert.doesNotMatch(row, /\$0\.00/);
      const page = await client.get(`/dashboard/offers/${id}`);
      const cards = /<dl class="grid"[\s\S]*?<\/dl>/.exec(page.body)?.[0] ?? '';
      assert.match(cards, /€0\.00/);
      assert.doesNotMatch(cards, /\$/);
    });

    it('refuses to redeliver a delivery that is still attempting (409 shown as a message)', async () => {
      const sub = await api('POST', '/api/public/webhooks', {
        body: { url: 'http://127.0.0.1:9/x', events: ['partner.approved'] },
      });
      await api('POST', '/api/v1/partners', { body: { name: 'Fresh', email: 'fresh@example.com' } });
      const delivery = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('subscription_id', '=', sub.body.id)
        .where('status', '=', 'attempting')
        .executeTakeFirstOrThrow();
      const res = await client.post(`/dashboard/deliveries/${delivery.id}/redeliver`);
      assert.match(await followFlash(client, res), /This delivery is being sent now/);
    });

    it('creates an API key shown once and revokes it, after which the API answers 401', async () => {
      const res = await client.post('/dashboard/settings/api-keys', { name: 'CI' });
      assert.equal(res.status, 200);
      const key = /id="new-key" value="(afk_[\w-]+)"/.exec(res.body)?.[1];
      assert.ok(key);
      assert.equal((await api('GET', '/api/v1/brand', { key })).status, 200);
      const list = await client.get('/dashboard/settings/api-keys');
      assert.doesNotMatch(list.body, new RegExp(key));
      assert.match(list.body, new RegExp(`${key.slice(0, 10)}…`));
      const keyId = /\/dashboard\/settings\/api-keys\/(key_\w+)\/revoke/.exec(list.body)?.[1];
      assert.ok(keyId);
      await client.post(`/dashboard/settings/api-keys/${keyId}/revoke`);
      assert.equal((await api('GET', '/api/v1/brand', { key })).status, 401);
      assert.equal((await client.post('/dashboard/settings/api-keys', { name: '' })).status, 422);
    });

    it("offers ISO 4217's current codes, and keeps a brand's code withdrawn since (HRK) selected rather than another", async () => {
      const { id } = (await api('GET', '/api/v1/brand')).body;
      await env.ctx.db.transact((trx) =>
        trx.updateTable('brands').set({ currency: 'HRK' }).where('id', '=', id).execute(),
      );
      const settings = (await client.get('/dashboard/settings')).body;
      assert.match(settings, /<option value="HRK" selected>/);
      assert.match(settings, /<option value="CLF">/);
      assert.doesNotMatch(settings, /<option value="SLL"/);
      assert.equal((await api('PATCH', '/api/v1/brand', { body: { currency: 'EUR' } })).status, 200);
      assert.doesNotMatch((await client.get('/dashboard/settings')).body, /<option value="HRK"/);
    });

    it('offers, keeps and shows a renamed time zone by its current IANA name (Asia/Kolkata, not Asia/Calcutta)', async () => {
      const before = (await api('GET', '/api/v1/brand')).body;
      const saved = await client.post('/dashboard/settings', {
        name: before.name,
        timezone: 'Asia/Kolkata',
        currency: before.currency,
        fraudThreshold: String(before.fraudThreshold),
      });
      assert.equal(await followFlash(client, saved), 'Settings saved.');
      assert.equal((await api('GET', '/api/v1/brand')).body.timezone, 'Asia/Kolkata');
      const settings = await client.get('/dashboard/settings');
      assert.match(settings.body, /<option value="Asia\/Kolkata" selected>/);
      assert.doesNotMatch(settings.body, /Asia\/Calcutta/, 'the menu offers the current name only');
      assert.match((await client.get('/dashboard/reports')).body, /days in Asia\/Kolkata\./);
      const restored = await api('PATCH', '/api/v1/brand', {
        body: { timezone: before.timezone, autoBan: before.autoBan },
      });
      assert.equal(restored.status, 200);
    });

    it('validates brand settings and the blocklist through their services', async () => {
      const bad = await client.post('/dashboard/settings', {
        name: 'Test Brand',
        timezone: 'Mars/Base',
        currency: 'USD',
        fraudThreshold: '101',
      });
      assert.equal(bad.status, 422);
      assert.match(bad.body, /id="fraudThreshold-error">must be &lt;= 100/);
      const zone = await client.post('/dashboard/settings', {
        name: 'Test Brand',
        timezone: 'Mars/Base',
        currency: 'USD',
        fraudThreshold: '60',
      });
      assert.match(zone.body, /id="timezone-error">must be an IANA time zone/);
      const ok = await client.post('/dashboard/settings', {
        name: 'Test Brand',
        timezone: 'Asia/Tokyo',
        currency: 'JPY',
        fraudThreshold: '60',
        autoBanEnabled: '1',
        highRiskClicks: '3',
        windowMinutes: '15',
      });
      assert.equal(await followFlash(client, ok), 'Settings saved.');
      const brand = (await api('GET', '/api/v1/brand')).body;
      assert.deepEqual(
        [brand.timezone, brand.currency, brand.fraudThreshold, brand.autoBan],
        ['Asia/Tokyo', 'JPY', 60, { highRiskClicks: 3, windowMinutes: 15 }],
      );
      const overview = await client.get('/dashboard');
      assert.match(
        overview.body,
        /Times are shown in Asia\/Tokyo; amounts in their own currency \(brand currency JPY\)\./,
      );
      const entry = await client.post('/dashboard/settings/blocklist', { type: 'cidr', value: '10.0.0.0/99' });
      assert.equal(entry.status, 422);
      assert.match(entry.body, /id="value-error">must be a CIDR range/);
      assert.match(entry.body, /value="10\.0\.0\.0\/99"/);
    });

    it('shows an invalid auto-ban count as one problem beside its field, not also as "autoBan: must be null"', async () => {
      const res = await client.post('/dashboard/settings', {
        name: 'Test Brand',
        timezone: 'UTC',
        currency: 'USD',
        fraudThreshold: '60',
        autoBanEnabled: '1',
        highRiskClicks: '0',
        windowMinutes: '10',
      });
      assert.equal(res.status, 422);
      const summary = /<div class="flash error" role="alert"[\s\S]*?<\/ul>/.exec(res.body)?.[0] ?? '';
      const problems = [...summary.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => m[1]);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.match(problems[0] ?? '', /^<a href="#highRiskClicks">High-risk clicks<\/a>: must be (?:>|&gt;)= 1$/);
      assert.ok(/id="highRiskClicks-error">must be (?:>|&gt;)= 1</.test(res.body), 'the problem beside its field');
      assert.doesNotMatch(res.body, /must be null/);
    });

    it('refuses NUL characters in a form with a 422 page', async () => {
      const res = await client.post('/dashboard/settings/api-keys', { name: 'bad\u0000name' });
      assert.equal(res.status, 422);
      assert.match(String(res.headers['content-type']), /^text\/html/);
    });
  });
}
