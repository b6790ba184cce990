/**
 * The conversions list's bulk form under the keyboard, in a real browser with the script on
 * and off: Enter on a ticked box (a common habit, "confirm the tick") must not approve or
 * reject anything — chromium's implicit submission from a checkbox clicks the form's first
 * enabled submit button, whatever it is. Only a press of "Approve selected" approves.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestEnv, describeOrSkip, type TestEnv, testedDialects } from '../helpers.js';
import { CHROMIUM_MISSING, launchChromium } from './browser.js';
import { createDashboardUser, PASSWORD } from './client.js';

/** What the page's submit events were, recorded after the dashboard's script had its say. */
const RECORD_SUBMITS = `(() => {
  window.submits = [];
  window.addEventListener('submit', (event) => {
    window.submits.push({ action: event.submitter?.value ?? null, cancelled: event.defaultPrevented });
  });
})()`;

for (const dialect of testedDialects()) {
  describeOrSkip(`conversions' bulk form and the keyboard (${dialect})`, { skip: CHROMIUM_MISSING }, () => {
    let env: TestEnv;
    let browser: Browser;
    let base: string;
    let email: string;
    let partnerId: string;

    const api = async (method: string, url: string, body?: unknown) => {
      const res = await env.request(method, url, { body });
      assert.ok(res.status < 300, `${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    /** An offer of its own with two pending conversions, and the list showing just those. */
    const pendingPair = async () => {
      const offer = await api('POST', '/api/v1/offers', { name: 'Keys', destinationUrl: 'https://shop.example/' });
      const ids: string[] = [];
      for (let i = 0; i < 2; i++)
        ids.push((await api('POST', '/api/v1/conversions', { offerId: offer.id, partnerId })).id);
      return { ids, list: `${base}/dashboard/conversions?status=pending&offerId=${offer.id}` };
    };
    const statuses = async (ids: string[]) =>
      Promise.all(ids.map(async (id) => (await api('GET', `/api/v1/conversions/${id}`)).status));

    const signIn = async (javaScriptEnabled: boolean): Promise<{ context: BrowserContext; page: Page }> => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled });
      const page = await context.newPage();
      await page.goto(`${base}/dashboard/login`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${base}/dashboard`);
      return { context, page };
    };

    before(async () => {
      env = await createTestEnv(dialect);
      email = await createDashboardUser(env);
      partnerId = (await api('POST', '/api/v1/partners', { name: 'Pat', email: 'pat@example.com' })).id;
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await env?.close();
    });

    it('approves nothing on Enter in a ticked box or "Select all" with the script on, and keeps the ticks', async () => {
      const { context, page } = await signIn(true);
      const { ids, list } = await pendingPair();
      await page.goto(list);
      await page.evaluate(RECORD_SUBMITS);
      const row = page.getByLabel(`Select conversion ${ids[0]}`);
      await row.focus();
      await page.keyboard.press('Space');
      await page.keyboard.press('Enter');
      const selectAll = page.getByLabel('Select all pending on this page');
      await selectAll.focus();
      await page.keyboard.press('Space');
      await page.keyboard.press('Enter');
      // Still this page (a submission would have replaced it and its record): every Enter was cancelled.
      const submits = await page.evaluate('window.submits');
      assert.deepEqual(submits, [
        { action: 'none', cancelled: true },
        { action: 'none', cancelled: true },
      ]);
      assert.equal(await page.getByLabel(`Select conversion ${ids[1]}`).isChecked(), true);
      assert.deepEqual(await statuses(ids), ['pending', 'pending']);
      // The explicit press still approves the selection.
      await page.getByRole('button', { name: 'Approve selected' }).click();
      assert.equal(await page.locator('.flash').first().textContent(), '2 conversions approved.');
      assert.deepEqual(await statuses(ids), ['approved', 'approved']);
      await context.close();
    });

    it('approves nothing on Enter in a ticked box with the script off, and says what to press', async () => {
      const { context, page } = await signIn(false);
      const { ids, list } = await pendingPair();
      await page.goto(list);
      const row = page.getByLabel(`Select conversion ${ids[0]}`);
      await row.focus();
      await page.keyboard.press('Space');
      assert.equal(await row.isChecked(), true);
      // Without the script the form is posted (a browser does that on Enter); what it asks for is nothing.
      const posted = page.waitForResponse((r) => r.url().endsWith('/dashboard/conversions/bulk'));
      await page.keyboard.press('Enter');
      assert.equal((await posted).status(), 303);
      await page.waitForURL(list);
      assert.match((await page.locator('.flash').first().textContent()) ?? '', /^Nothing was decided/);
      assert.deepEqual(await statuses(ids), ['pending', 'pending']);
      await page.getByLabel(`Select conversion ${ids[1]}`).check();
      await page.getByRole('button', { name: 'Approve selected' }).click();
      assert.equal(await page.locator('.flash').first().textContent(), '1 conversion approved.');
      assert.deepEqual(await statuses(ids), ['pending', 'approved']);
      await context.close();
    });
  });
}
