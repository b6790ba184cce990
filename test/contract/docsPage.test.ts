/**
 * /docs in a real browser (Debian chromium via playwright-core) as a new user meets it: the
 * service started without PUBLIC_URL, the page opened at whatever host name reaches it, an API
 * key entered under "Authorize", and "Try it out" on GET /api/v1/offers. The document's server
 * is relative, so the call goes to the page's own origin and the CSP (connect-src 'self')
 * lets it through; nothing on the page may log an error, CSP violations included.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { CHROMIUM_MISSING, launchChromium, screenshot } from '../dashboard/browser.js';
import { createTestEnv, describeOrSkip, type TestEnv } from '../helpers.js';
import { freePort } from '../net.js';

// The page reads one list: one dialect is enough.
describeOrSkip('/docs "Try it out" in a real browser', { skip: CHROMIUM_MISSING }, () => {
  let env: TestEnv;
  let browser: Browser;
  let port: number;

  before(async () => {
    port = await freePort();
    env = await createTestEnv('sqlite');
    assert.equal(env.ctx.config.publicUrlIsExplicit, false, 'started without PUBLIC_URL');
    await env.app.listen({ port, host: '127.0.0.1' });
    const offer = await env.request('POST', '/api/v1/offers', {
      body: { name: 'Docs offer', destinationUrl: 'https://shop.example/' },
    });
    assert.equal(offer.status, 201);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await env?.close();
  });

  it('shows every operation when opened with a query string (a link with utm_ parameters)', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`http://127.0.0.1:${port}/docs?utm_source=newsletter`);
    assert.equal(response?.status(), 200);
    assert.equal(new URL(page.url()).search, '', 'moved to /docs');
    await page.locator('#operations-offers-listOffers').waitFor();
    assert.ok((await page.locator('.opblock').count()) > 50);
    await page.close();
  });

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`lists the offers with an API key from http://${host}:PORT/docs, with no console error`, async () => {
      const origin = `http://${host}:${port}`;
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));

      const response = await page.goto(`${origin}/docs`);
      assert.equal(response?.status(), 200);
      assert.match(String(response?.headers()['content-security-policy']), /connect-src 'self'/);

      await page.getByRole('button', { name: 'Authorize' }).first().click();
      // The first scheme of the dialog is the brand key (bearerAuth); the second the partner key.
      const brandKey = page.locator('.dialog-ux .auth-container').first();
      await brandKey.locator('input').fill(env.brand.apiKey);
      await brandKey.getByRole('button', { name: 'Apply credentials' }).click();
      await brandKey.getByRole('button', { name: 'Close' }).click();

      const operation = page.locator('#operations-offers-listOffers');
      await operation.locator('.opblock-summary').click();
      await operation.getByRole('button', { name: 'Try it out' }).click();
      const [call] = await Promise.all([
        page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/offers'),
        operation.getByRole('button', { name: 'Execute' }).click(),
      ]);
      assert.equal(new URL(call.url()).origin, origin, 'the call goes to the origin the page was opened at');
      assert.equal(call.status(), 200);
      assert.equal((await call.json()).data[0].name, 'Docs offer');
      const status = operation.locator('.live-responses-table tbody .response-col_status').first();
      assert.equal((await status.textContent())?.trim(), '200');
      await screenshot(page, `docs-try-it-out-${host}`);
      assert.deepEqual(problems, []);
      await context.close();
    });
  }
});
