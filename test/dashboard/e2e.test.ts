/**
 * The dashboard end to end in a real browser (Debian chromium via playwright-core): a
 * brand's day from sign-in to sign-out, each page photographed to
 * test-results/screenshots/. Skipped with a message when chromium is not installed.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { SESSION_TTL_MS } from '../../src/modules/users/sessions.js';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { createTestEnv, describeOrSkip, type TestEnv, testedDialects } from '../helpers.js';
import { CHROMIUM_MISSING, launchChromium, screenshot, startReceiver } from './browser.js';
import { createDashboardUser, PASSWORD } from './client.js';

/** The text of an element (biome prefers textContent to layout-dependent innerText). */
const text = async (locator: Locator) => (await locator.textContent()) ?? '';

const RECEIVER_ERROR = '{"error":"receiver exploded: database offline"}';

for (const dialect of testedDialects()) {
  describeOrSkip(`dashboard in a real browser (${dialect})`, { skip: CHROMIUM_MISSING }, () => {
    let env: TestEnv;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let base: string;
    let email: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let partnerEndpoint: Awaited<ReturnType<typeof startReceiver>>;
    let dispatcher: Dispatcher;
    const problems: string[] = [];
    const ids: Record<string, string> = {};

    const nav = (name: string) =>
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
    const flash = () => text(page.locator('.flash').first());
    /** Clicks and waits for the page the click leads to: a locator's count() does not wait. */
    const clickAndLoad = async (target: Locator) => {
      const loaded = page.waitForEvent('load');
      await target.click();
      await loaded;
    };
    const api = (method: string, url: string, body?: unknown, key?: string) => env.request(method, url, { body, key });

    before(async () => {
      // One attempt per delivery, so a failure is final at once and the log shows it.
      env = await createTestEnv(dialect, { env: { WEBHOOK_MAX_ATTEMPTS: '1' } });
      email = await createDashboardUser(env);
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
      // The receiver fails every delivery except the redelivery (its second request).
      receiver = await startReceiver((n) =>
        n === 1 ? { status: 200, body: '{"ok":true}' } : { status: 500, body: RECEIVER_ERROR },
      );
      partnerEndpoint = await startReceiver(() => ({ status: 200, body: 'OK' }));
      dispatcher = new Dispatcher(env.ctx);
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      page = await context.newPage();
      page.on('dialog', (dialog) => void dialog.accept());
      // A CSP violation, a script error or anything fetched from elsewhere fails the test.
      page.on('console', (message) => {
        // Pages answered 403/422 on purpose are logged by chromium too; those are expected.
        const expected = /^Failed to load resource: the server responded with a status of (403|422)/;
        if (message.type() === 'error' && !expected.test(message.text())) problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => {
        if (!request.url().startsWith(base) && !request.url().startsWith('data:'))
          problems.push(`external: ${request.url()}`);
      });
    });

    after(async () => {
      await browser?.close();
      await dispatcher?.close();
      await receiver?.close();
      await partnerEndpoint?.close();
      await env?.close();
    });

    it('redirects to the sign-in page and signs in', async () => {
      await page.goto(`${base}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/dashboard/login');
      await screenshot(page, 'login');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('wrong password!');
      await page.getByRole('button', { name: 'Sign in' }).click();
      assert.match(await flash(), /not correct/);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${base}/dashboard`);
      assert.equal(await text(page.getByRole('heading', { level: 1 })), 'Overview');
      const cookie = (await context.cookies()).find((c) => c.name === 'affitrack_session');
      assert.ok(cookie);
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Lax');
      assert.equal(cookie.path, '/dashboard');
      assert.equal(cookie.secure, false);
    });

    it('puts keyboard focus on the skip link first', async () => {
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
    });

    it('creates an offer', async () => {
      await nav('Offers').click();
      await page.getByRole('link', { name: 'New offer' }).click();
      await page.getByRole('button', { name: 'Create offer' }).click();
      assert.match(await text(page.getByRole('alert')), /Name: is required/);
      await page.getByLabel('Name', { exact: true }).fill('Spring Sale');
      await page.getByLabel('Destination URL').fill('https://shop.example/land?c={click_id}');
      await page.getByLabel('Revenue per conversion').fill('40.00');
      await page.getByLabel('Partner payout per conversion').fill('12.50');
      await page.getByLabel('Daily cap').fill('100');
      await page.getByLabel('Fallback URL').fill('https://shop.example/sold-out');
      await page.getByRole('button', { name: 'Create offer' }).click();
      assert.equal(await flash(), 'Offer “Spring Sale” created.');
      ids.offer = page.url().split('/').pop() ?? '';
      const offer = (await api('GET', `/api/v1/offers/${ids.offer}`)).body;
      assert.equal(offer.revenueCents, 4000);
      assert.equal(offer.payoutCents, 1250);
      assert.equal(offer.caps.daily, 100);
      assert.equal(offer.fallbackUrl, 'https://shop.example/sold-out');
      await nav('Offers').click();
      await screenshot(page, 'offers');
    });

    it('approves an applicant and bans another with a reason', async () => {
      for (const [name, key] of [
        ['Jane Media', 'jane'],
        ['Spammy Clicks', 'spammy'],
      ]) {
        const res = await env.app.inject({
          method: 'POST',
          url: '/api/public/partners/apply',
          payload: { brandSlug: env.brand.slug, name, email: `${key}@example.com`, website: 'https://jane.example' },
        });
        ids[key!] = res.json().id;
      }
      await nav('Partners').click();
      await page.getByRole('link', { name: /Applicants \(2\)/ }).click();
      await screenshot(page, 'partners');
      await page
        .getByRole('row', { name: /Jane Media/ })
        .getByRole('button', { name: 'Approve' })
        .click();
      assert.equal(
        await flash(),
        'Jane Media is approved and can now send traffic. Invite them to the partner portal from their page.',
      );
      await page.getByLabel('Reason for banning Spammy Clicks').fill('Fake traffic');
      await page
        .getByRole('row', { name: /Spammy Clicks/ })
        .getByRole('button', { name: 'Ban' })
        .click();
      assert.equal(await flash(), 'Spammy Clicks is banned.');
      assert.equal((await api('GET', `/api/v1/partners/${ids.jane}`)).body.status, 'active');
      const spammy = (await api('GET', `/api/v1/partners/${ids.spammy}`)).body;
      assert.equal(spammy.status, 'banned');
      assert.equal(spammy.banReason, 'Fake traffic');
    });

    it("copies a partner's tracking link from the offer page", async () => {
      await page.goto(`${base}/dashboard/offers/${ids.offer}`);
      const expected = `${env.ctx.config.publicUrl}/t/${ids.offer}/${ids.jane}`;
      assert.equal(await page.locator(`#link-${ids.jane}`).inputValue(), expected);
      await page
        .getByRole('row', { name: /Jane Media/ })
        .getByRole('button', { name: 'Copy' })
        .click();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), expected);
      await screenshot(page, 'offer');
    });

    it('approves and rejects conversions recorded through the API', async () => {
      const postback = await api('POST', `/api/v1/partners/${ids.jane}/postbacks`, {
        url: `${partnerEndpoint.url}?cid={conversion_id}&payout={payout}`,
        events: ['conversion.approved'],
      });
      assert.equal(postback.status, 201);
      for (const txn of ['order-1001', 'order-1002', 'order-1003']) {
        const res = await api('POST', '/api/v1/conversions', {
          offerId: ids.offer,
          partnerId: ids.jane,
          externalTxnId: txn,
        });
        assert.equal(res.status, 201);
        assert.equal(res.body.status, 'pending');
        ids[txn] = res.body.id;
      }
      await nav('Conversions').click();
      await screenshot(page, 'conversions');
      await page.getByLabel(`Select conversion ${ids['order-1001']}`).check();
      await page.getByRole('button', { name: 'Approve selected' }).click();
      assert.equal(await flash(), '1 conversion approved.');
      // A row's Reject asks for its own reason (the bulk reason is not used) and a confirmation.
      await page.getByLabel('Rejection reason (optional)').fill('Bulk reason, not this one');
      await page.getByLabel(`Reject ${ids['order-1002']}…`).click();
      await page.getByLabel(`Reason for rejecting ${ids['order-1002']}`).fill('Returned order');
      const confirmed = page.waitForEvent('dialog');
      await page
        .getByRole('row', { name: new RegExp(ids['order-1002']!) })
        .getByRole('button', { name: `Reject ${ids['order-1002']}`, exact: true })
        .click();
      assert.match((await confirmed).message(), new RegExp(`Reject conversion ${ids['order-1002']}`));
      assert.equal(await flash(), 'Conversion rejected.');
      assert.equal((await api('GET', `/api/v1/conversions/${ids['order-1001']}`)).body.status, 'approved');
      const rejected = (await api('GET', `/api/v1/conversions/${ids['order-1002']}`)).body;
      assert.equal(rejected.status, 'rejected');
      assert.equal(rejected.rejectionReason, 'Returned order');
      await page.getByLabel('Status').selectOption('pending');
      await clickAndLoad(page.getByRole('button', { name: 'Filter' }));
      assert.equal(await page.locator('tbody tr').count(), 1);
    });

    it('creates a subscription and shows its secret once', async () => {
      await nav('Webhooks').click();
      await page.getByRole('link', { name: 'New subscription' }).click();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByLabel('conversion.created').check();
      await page.getByLabel('conversion.approved').check();
      await page.getByRole('button', { name: 'Create subscription' }).click();
      ids.secret = await page.locator('#new-secret').inputValue();
      assert.match(ids.secret, /^whsec_/);
      await screenshot(page, 'webhook-created');
      const list = (await api('GET', '/api/public/webhooks')).body.data;
      assert.equal(list.length, 1);
      assert.deepEqual(list[0].events, ['conversion.created', 'conversion.approved']);
      assert.equal(list[0].hasSecret, true);
      await clickAndLoad(nav('Webhooks'));
      assert.equal(await page.locator('#new-secret').count(), 0);
      await screenshot(page, 'webhooks');
    });

    it("shows a failed delivery's attempts with the receiver's answer and redelivers it", async () => {
      await api('POST', '/api/v1/conversions', {
        offerId: ids.offer,
        partnerId: ids.jane,
        externalTxnId: 'order-2001',
      });
      await dispatcher.runOnce();
      assert.equal(receiver.received.length, 1);
      const first = receiver.received[0]!;
      verifyWebhookSignature({
        secret: ids.secret!,
        header: first.headers['x-service-signature'],
        rawBody: first.body,
        now: env.clock.now(),
      });

      await nav('Delivery log').click();
      await page.getByLabel('Status').selectOption('failed');
      await page.getByRole('button', { name: 'Filter' }).click();
      await screenshot(page, 'deliveries');
      await page.locator('tbody tr a').first().click();
      const attempts = page.getByRole('table', { name: /Attempts/ });
      assert.match(await text(attempts), /500/);
      assert.match(await text(attempts), /receiver exploded: database offline/);
      await screenshot(page, 'delivery');

      await page.getByRole('button', { name: 'Redeliver' }).click();
      assert.match(await flash(), /One attempt is being made now/);
      await dispatcher.runOnce();
      await page.reload();
      assert.equal(await attempts.locator('tbody tr').count(), 2);
      assert.match(await text(page.getByRole('heading', { level: 1 })), /succeeded/);
      await screenshot(page, 'delivery-redelivered');
      assert.equal(receiver.received[1]?.body, first.body);
      assert.equal(receiver.received[1]?.headers['x-service-webhook-id'], first.headers['x-service-webhook-id']);
    });

    it("shows a partner's postback URL and its recent sends", async () => {
      assert.equal(partnerEndpoint.received.length, 1);
      await page.goto(`${base}/dashboard/partners/${ids.jane}`);
      const templates = await text(page.getByRole('table', { name: 'Postback URLs' }));
      assert.ok(templates.includes(`${partnerEndpoint.url}?cid={conversion_id}&payout={payout}`));
      const sends = await text(page.getByRole('table', { name: 'Recent postback sends' }));
      assert.match(sends, /conversion\.approved/);
      assert.match(sends, /succeeded/);
      assert.ok(sends.includes(`cid=${ids['order-1001']}&payout=12.50`));
      await screenshot(page, 'partner');
    });

    it('creates an API key, shows it once, and revokes it (then the API answers 401)', async () => {
      await nav('Settings').click();
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByLabel('Key name').fill('Order system');
      await page.getByRole('button', { name: 'Create key' }).click();
      const key = await page.locator('#new-key').inputValue();
      assert.match(key, /^afk_/);
      await page.getByRole('button', { name: 'Copy' }).click();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
      await screenshot(page, 'api-keys');
      assert.equal((await api('GET', '/api/v1/brand', undefined, key)).status, 200);
      await page
        .getByRole('row', { name: /Order system/ })
        .getByRole('button', { name: 'Revoke' })
        .click();
      assert.match(await flash(), /revoked/);
      assert.equal((await api('GET', '/api/v1/brand', undefined, key)).status, 401);
      assert.equal(await page.locator('#new-key').count(), 0);
    });

    it('saves brand settings and blocklists an IP', async () => {
      await nav('Settings').click();
      await page.getByLabel('Fraud threshold').fill('70');
      await page.getByLabel('Time zone').selectOption('Europe/Berlin');
      await page.getByRole('button', { name: 'Save settings' }).click();
      assert.equal(await flash(), 'Settings saved.');
      const brand = (await api('GET', '/api/v1/brand')).body;
      assert.equal(brand.fraudThreshold, 70);
      assert.equal(brand.timezone, 'Europe/Berlin');
      await screenshot(page, 'settings');
      await page.getByRole('link', { name: 'Fraud blocklist' }).click();
      await page.getByLabel('Value').fill('127.0.0.1');
      await page.getByRole('button', { name: 'Add' }).click();
      assert.equal(await flash(), '127.0.0.1 added to the blocklist.');
      await screenshot(page, 'blocklist');
    });

    it('shows reports with a chart and exports CSV', async () => {
      await clickAndLoad(nav('Reports'));
      assert.equal(await page.locator('svg.chart').count(), 1);
      await page.getByRole('checkbox', { name: 'Offer' }).check();
      await page.getByRole('button', { name: 'Show report' }).click();
      assert.match(await text(page.locator('table')), /Spring Sale/);
      await screenshot(page, 'reports');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Export CSV' }).click(),
      ]);
      assert.match(download.suggestedFilename(), /^affitrack-report-\d{4}-\d\d-\d\d-to-\d{4}-\d\d-\d\d\.csv$/);
      const csv = readFileSync((await download.path()) ?? '', 'utf8');
      assert.match(csv.split('\r\n')[0] ?? '', /^day,offer_id,offer_name,clicks/);
      assert.match(csv, /Spring Sale/);
    });

    it('shows what needs attention on the overview', async () => {
      // A click from the blocklisted IP with a bot user agent is high-risk.
      await env.app.inject({
        method: 'GET',
        url: `/t/${ids.offer}/${ids.jane}`,
        headers: { 'user-agent': 'curl/8.0' },
      });
      await api('POST', '/api/v1/conversions', {
        offerId: ids.offer,
        partnerId: ids.jane,
        externalTxnId: 'order-3001',
      });
      await dispatcher.runOnce();
      await nav('Overview').click();
      const main = await text(page.locator('main'));
      assert.match(main, /Pending conversions to review/);
      assert.match(main, /bot user agent/);
      assert.ok(main.includes(receiver.url), 'the failing subscription is listed');
      await screenshot(page, 'overview');
    });

    it('refuses a form whose CSRF token was tampered with', async () => {
      await nav('Settings').click();
      // Page scripts are strings here: the test project is compiled without the DOM library.
      await page.evaluate(`for (const input of document.querySelectorAll('input[name=_csrf]')) input.value = 'forged'`);
      await page.getByRole('button', { name: 'Save settings' }).click();
      assert.equal(await text(page.getByRole('heading', { level: 1 })), 'This form could not be accepted');
      await screenshot(page, 'csrf-refused');
    });

    it('signs out, and the old session cookie no longer works', async () => {
      const old = (await context.cookies()).find((c) => c.name === 'affitrack_session');
      await page.goto(`${base}/dashboard`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/dashboard\/login\?signedout=1$/);
      assert.equal(await flash(), 'You have signed out.');
      assert.ok(old);
      await context.addCookies([old]);
      await page.goto(`${base}/dashboard/offers`);
      assert.equal(new URL(page.url()).pathname, '/dashboard/login');
    });

    it('ends a session after 12 hours', async () => {
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${base}/dashboard/offers`);
      env.clock.advance(SESSION_TTL_MS + 1000);
      await page.reload();
      assert.equal(new URL(page.url()).pathname, '/dashboard/login');
      assert.match(await flash(), /session has expired/);
    });

    it('loaded nothing from elsewhere and broke no content-security rule', () => {
      assert.deepEqual(problems, []);
    });
  });
}
