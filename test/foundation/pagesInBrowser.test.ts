/**
 * The pages outside the dashboard in a real browser (Debian chromium via playwright-core),
 * under the shared Content-Security-Policy: the API docs with "Try it out", the partner
 * application form with JavaScript switched off, and a dead tracking link's page.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM_MISSING, launchChromium } from '../dashboard/browser.js';
import { createTestEnv, describeOrSkip, type TestEnv } from '../helpers.js';
import { freePort } from '../net.js';

// The pages read little from the database: one dialect is enough.
describeOrSkip('public pages in a real browser', { skip: CHROMIUM_MISSING }, () => {
  let env: TestEnv;
  let browser: Browser;
  let base: string;

  /**
   * A page that records console errors (CSP violations among them), failed subresources and
   * requests elsewhere. Pages answered 404/422 on purpose are documents, not subresources;
   * the browser's own /favicon.ico probe is left out (public pages have no icon of their own).
   */
  async function watchedPage(options: { javaScriptEnabled?: boolean } = {}) {
    const context = await browser.newContext(options);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      // Failed loads are reported by the response listener below, with their URL.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        problems.push(`console: ${message.text()}`);
    });
    page.on('response', (response) => {
      const request = response.request();
      if (response.status() < 400 || request.resourceType() === 'document') return;
      if (new URL(response.url()).pathname === '/favicon.ico') return;
      problems.push(`failed: ${response.status()} ${response.url()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('request', (request) => {
      if (!request.url().startsWith(base) && !request.url().startsWith('data:'))
        problems.push(`external: ${request.url()}`);
    });
    return { page, problems };
  }

  const heading = async (page: Page) => (await page.getByRole('heading', { level: 1 }).textContent()) ?? '';

  before(async () => {
    // "Try it out" calls the document's relative server: the page's own origin (docsPage.test.ts
    // covers a start without PUBLIC_URL).
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = await createTestEnv('sqlite', { env: { PUBLIC_URL: base } });
    await env.app.listen({ port, host: '127.0.0.1' });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await env?.close();
  });

  it('shows the API docs with no console error, and "Try it out" calls this origin', async () => {
    const { page, problems } = await watchedPage();
    const response = await page.goto(`${base}/docs/`);
    assert.match(String(response?.headers()['content-security-policy']), /connect-src 'self'/);
    const health = page.locator('.opblock-get', { hasText: '/health' }).first();
    await health.locator('.opblock-summary').click();
    await page.getByRole('button', { name: 'Try it out' }).click();
    const [call] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${base}/health`),
      page.getByRole('button', { name: 'Execute' }).click(),
    ]);
    assert.equal(call.status(), 200);
    const status = page.locator('.live-responses-table tbody .response-col_status').first();
    assert.equal((await status.textContent())?.trim(), '200');
    assert.deepEqual(problems, []);
  });

  it('takes a partner application with JavaScript switched off', async () => {
    const { page, problems } = await watchedPage({ javaScriptEnabled: false });
    await page.goto(`${base}/apply/${env.brand.slug}`);
    assert.equal(await heading(page), 'Become a partner of Test Brand');
    await page.getByLabel('Name or company').fill('Quiet Quail Media');
    await page.getByLabel('Email').fill('not-an-email');
    await page.getByRole('button', { name: 'Send application' }).click();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /Email: must be an email address/);
    // Without a script the summary still takes the focus (autofocus), and the field names its problem.
    assert.equal(await page.evaluate('document.activeElement.id'), 'error-summary');
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator('#email-error').textContent(), 'must be an email address');
    assert.equal(await page.getByLabel('Name or company').inputValue(), 'Quiet Quail Media');
    await page.getByLabel('Email').fill('quail@example.com');
    await page.getByRole('button', { name: 'Send application' }).click();
    assert.equal(await heading(page), 'Thank you');
    const applicants = await env.request('GET', '/api/v1/partners?status=applicant');
    assert.ok(applicants.body.data.some((p: { email: string }) => p.email === 'quail@example.com'));
    assert.deepEqual(problems, []);
  });

  it('styles a dead tracking link’s page from the stylesheet the policy allows', async () => {
    const { page, problems } = await watchedPage();
    const response = await page.goto(`${base}/t/off_nope/prt_nope`);
    assert.equal(response?.status(), 404);
    assert.equal(await heading(page), 'This link is not active');
    // 34rem of 16px: the column width public.css gives the page.
    assert.equal(await page.evaluate('getComputedStyle(document.body).maxWidth'), '544px');
    assert.deepEqual(problems, []);
  });
});
