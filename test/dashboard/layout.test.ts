/**
 * Every main page of the dashboard in a real browser at a phone's width (390 px) and a
 * desk's (1280 px): no page wider than the screen, axe-core finds nothing serious or
 * critical, nothing logged to the console, and the phone layout keeps actions and content
 * usable. With `SCREENSHOTS=1` each page is photographed to docs/screenshots/ (the README's
 * pictures).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, it } from 'node:test';
import axe from 'axe-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, describeOrSkip, type TestEnv, testedDialects } from '../helpers.js';
import { CHART_LABELS_SCRIPT, CHROMIUM_MISSING, type ChartLabels, launchChromium, startReceiver } from './browser.js';
import { createDashboardUser, PASSWORD } from './client.js';
import { seedRealisticBrand } from './seed.js';

const WIDTHS = [
  { name: 'phone', width: 390, height: 844 },
  { name: 'desk', width: 1280, height: 900 },
] as const;
const SCREENSHOT_DIR = path.resolve('docs/screenshots');
/** The pages photographed for the README (every page is checked; these are the ones shown). */
const SCREENSHOT_PAGES = new Set([
  'overview',
  'offers',
  'partners',
  'conversions',
  'clicks',
  'reports',
  'analytics',
  'deliveries',
  'delivery',
  'settings',
]);
const LONG_URL_PATH = `/hooks/${'very-long-path-segment/'.repeat(16)}end`;

/** The pages a marketer uses, by the name their screenshot gets; ids are filled in by the seed. */
function pages(ids: Record<string, string>): Array<[string, string]> {
  return [
    ['overview', '/dashboard'],
    ['offers', '/dashboard/offers'],
    ['offer', `/dashboard/offers/${ids.offer}`],
    ['offer-long-name', `/dashboard/offers/${ids.longOffer}`],
    ['partners', '/dashboard/partners'],
    ['partner', `/dashboard/partners/${ids.partner}`],
    ['partner-long-name', `/dashboard/partners/${ids.longPartner}`],
    ['conversions', '/dashboard/conversions'],
    ['conversion', `/dashboard/conversions/${ids.conversion}`],
    ['clicks', '/dashboard/clicks'],
    ['click', `/dashboard/clicks/${ids.click}`],
    ['reports', '/dashboard/reports?time=day&by=offer'],
    ['analytics', '/dashboard/analytics'],
    ['payouts', '/dashboard/payouts'],
    ['webhooks', '/dashboard/webhooks'],
    ['webhook', `/dashboard/webhooks/${ids.subscription}`],
    ['deliveries', '/dashboard/deliveries'],
    ['delivery', `/dashboard/deliveries/${ids.delivery}`],
    ['settings', '/dashboard/settings'],
    ['api-keys', '/dashboard/settings/api-keys'],
    ['blocklist', '/dashboard/settings/blocklist'],
  ];
}

for (const dialect of testedDialects()) {
  describeOrSkip(`dashboard layout and accessibility (${dialect})`, { skip: CHROMIUM_MISSING }, () => {
    let env: TestEnv;
    let browser: Browser;
    let base: string;
    let email: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const ids: Record<string, string> = {};
    const api = async (method: string, url: string, body?: unknown) => {
      const res = await env.request(method, url, { body });
      assert.ok(res.status < 300, `${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };

    before(async () => {
      // Clicks come from several countries through X-Forwarded-For (the seed's addresses).
      env = await createTestEnv(dialect, { env: { WEBHOOK_MAX_ATTEMPTS: '1', TRUST_PROXY: 'true' } });
      await seedRealisticBrand(env);
      email = await createDashboardUser(env);
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
      receiver = await startReceiver(() => ({
        status: 500,
        body: JSON.stringify({ error: 'receiver exploded', detail: 'x'.repeat(300) }),
      }));
      const offer = await api('POST', '/api/v1/offers', {
        name: 'Spring Sale with a rather long offer name',
        destinationUrl: 'https://shop.example/land?c={click_id}',
        revenueCents: 4000,
        payoutCents: 1250,
      });
      ids.offer = offer.id;
      const partner = await api('POST', '/api/v1/partners', {
        name: 'Jane Media',
        email: 'jane@example.com',
        website: 'https://jane-media.example/a/very/long/path/that/does/not/fit',
      });
      ids.partner = partner.id;
      // Names of up to 200 characters without a space (the API's and the public form's limit).
      ids.longOffer = (
        await api('POST', '/api/v1/offers', {
          name: `Offer-with-an-extremely-long-unbroken-name-${'z'.repeat(150)}`,
          destinationUrl: 'https://shop.example/',
          payoutCents: 100,
        })
      ).id;
      ids.longPartner = (
        await api('POST', '/api/v1/partners', { name: `Partner${'n'.repeat(120)}`, email: 'long@example.com' })
      ).id;
      // A click and a conversion under long names, the overview's, clicks' and conversions' lists
      // wrap them (another partner: the first keeps no balance, for the test that needs none).
      const trafficPartner = (
        await api('POST', '/api/v1/partners', { name: `Traffic${'t'.repeat(190)}`, email: 'long2@example.com' })
      ).id;
      const longClick = await env.app.inject({ method: 'GET', url: `/t/${ids.longOffer}/${trafficPartner}` });
      assert.equal(longClick.statusCode, 302);
      await api('POST', '/api/v1/conversions', {
        offerId: ids.longOffer,
        partnerId: trafficPartner,
        externalTxnId: 'order-long',
      });
      await env.app.inject({
        method: 'POST',
        url: '/api/public/partners/apply',
        payload: { brandSlug: env.brand.slug, name: 'Applicant Ads', email: 'apply@example.com' },
      });
      ids.subscription = (
        await api('POST', '/api/public/webhooks', {
          url: `${receiver.url.replace('/hooks', '')}${LONG_URL_PATH}`,
          events: ['conversion.created'],
        })
      ).id;
      await api('POST', `/api/v1/partners/${ids.partner}/postbacks`, {
        url: `${receiver.url}?cid={conversion_id}`,
        events: ['conversion.created'],
      });
      for (const ua of ['Mozilla/5.0 (X11; Linux x86_64) Chrome/120', 'curl/8.0']) {
        const click = await env.app.inject({
          method: 'GET',
          url: `/t/${ids.offer}/${ids.partner}?sub1=spring&sub2=banner`,
          headers: { 'user-agent': ua },
        });
        assert.equal(click.statusCode, 302);
      }
      for (const txn of ['order-1', 'order-2', 'order-3']) {
        const conversion = await api('POST', '/api/v1/conversions', {
          offerId: ids.offer,
          partnerId: ids.partner,
          externalTxnId: txn,
        });
        ids.conversion = conversion.id;
      }
      const dispatcher = new Dispatcher(env.ctx);
      await dispatcher.runOnce();
      await dispatcher.close();
      const delivery = await env.ctx.db.read
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('kind', '=', 'webhook')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
      ids.delivery = delivery.id;
      ids.click = (await api('GET', '/api/v1/clicks')).data[0].id;
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await receiver?.close();
      await env?.close();
    });

    for (const size of WIDTHS) {
      describeOrSkip(`at ${size.width} px`, { skip: false }, () => {
        let context: BrowserContext;
        let page: Page;
        const problems: string[] = [];

        before(async () => {
          context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
          page = await context.newPage();
          page.on('console', (m) => {
            if (m.type() === 'error') problems.push(`console: ${m.text()}`);
          });
          page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
          await page.goto(`${base}/dashboard/login`);
          await page.getByLabel('Email').fill(email);
          await page.getByLabel('Password').fill(PASSWORD);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.waitForURL(`${base}/dashboard`);
        });

        after(async () => {
          await context?.close();
        });

        it('shows every main page within the screen, with no serious axe-core finding and no console error', async () => {
          const findings: string[] = [];
          let checked = 0;
          for (const [name, url] of pages(ids)) {
            const response = await page.goto(base + url);
            assert.equal(response?.status(), 200, `${url} answers 200`);
            const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
            assert.ok(overflow <= 0, `${url} is ${overflow} px wider than the ${size.width} px screen`);
            // Nor does any table hide columns behind a sideways scroll.
            const scrolled = await page.evaluate<string[]>(`[...document.querySelectorAll('.table-wrap')]
              .filter((e) => e.scrollWidth > e.clientWidth + 1)
              .map((e) => e.getAttribute('aria-label') + ' ' + e.scrollWidth + '>' + e.clientWidth)`);
            assert.deepEqual(scrolled, [], `${url}: tables wider than the screen`);
            await page.evaluate(axe.source);
            const result = await page.evaluate<axe.AxeResults>("axe.run(document, { resultTypes: ['violations'] })");
            checked += 1;
            for (const v of result.violations) {
              if (v.impact === 'serious' || v.impact === 'critical') {
                findings.push(`${url}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
              }
            }
            if (process.env.SCREENSHOTS === '1' && SCREENSHOT_PAGES.has(name)) {
              mkdirSync(SCREENSHOT_DIR, { recursive: true });
              await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-${size.width}.png`) });
            }
          }
          assert.equal(checked, pages(ids).length, 'axe ran on every page');
          assert.deepEqual(findings, []);
          assert.deepEqual(problems, []);
        });

        it('shows where clicks come from: top countries and device types on the overview, and on every click', async () => {
          await page.goto(`${base}/dashboard`);
          for (const heading of ['Top countries', 'Device types']) {
            const table = page.getByRole('table', { name: new RegExp(`^${heading}, last 30 days`) });
            const rows = await table.locator('tbody tr').count();
            assert.ok(rows >= 2, `${heading}: ${rows} rows`);
            const box = await table.boundingBox();
            assert.ok(box && box.x >= 0 && box.x + box.width <= size.width, `${heading} fits ${size.width} px`);
          }
          await page.goto(`${base}/dashboard/clicks`);
          for (const column of ['Country', 'Device', 'Referrer']) {
            const cell = page.locator(`table tbody tr td[data-label="${column}"]`).first();
            const text = (await cell.innerText()).trim();
            assert.ok(text.length > 0, `the first click's ${column} is shown`);
            const box = await cell.boundingBox();
            assert.ok(
              box && box.x >= 0 && box.x + box.width <= size.width,
              `${column} at x=${box?.x} fits ${size.width} px`,
            );
          }
          assert.ok(
            (await page.locator('td[data-label="Country"]', { hasText: /\([A-Z]{2}\)/ }).count()) > 0,
            'clicks name their country',
          );
          assert.ok(
            (await page.locator('td[data-label="Device"]', { hasText: /^(desktop|mobile|tablet) · / }).count()) > 0,
            'clicks name their device, OS and browser',
          );
        });

        it("keeps a table row's actions on the screen", async () => {
          await page.goto(`${base}/dashboard/partners?status=applicant`);
          const approve = page.getByRole('button', { name: 'Approve' }).first();
          await approve.scrollIntoViewIfNeeded();
          const box = await approve.boundingBox();
          assert.ok(box, 'the Approve button is rendered');
          assert.ok(box.x >= 0 && box.x + box.width <= size.width, `Approve at x=${box.x} fits ${size.width} px`);
        });

        it('shows conversions, not only filters, on the first screen', async () => {
          await page.goto(`${base}/dashboard/conversions`);
          const firstRow = page.locator('table tbody tr').first();
          const box = await firstRow.boundingBox();
          assert.ok(box, 'a conversion row is rendered');
          assert.ok(box.y < size.height, `the first conversion starts at y=${box.y}, inside the first screen`);
        });

        it("keeps a partner page's fields, its monospaced postback URL too, at 16 px on a phone", async () => {
          if (size.name !== 'phone') return;
          await page.goto(`${base}/dashboard/partners/${ids.partner}`);
          const fonts = await page.evaluate<
            string[]
          >(`[...document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]), select, textarea')]
            .map((e) => e.id + ':' + parseFloat(getComputedStyle(e).fontSize))`);
          assert.ok(
            fonts.some((f) => f.startsWith('url:')),
            `the postback form has its URL field: ${fonts.join(', ')}`,
          );
          assert.deepEqual(
            fonts.filter((f) => Number(f.split(':').pop()) < 16),
            [],
          );
        });

        it('keeps fields at 16 px, checkboxes at 24 px, chart text legible and captions the width of their card', async () => {
          await page.goto(`${base}/dashboard/conversions?status=pending`);
          const fonts = await page.evaluate<
            number[]
          >(`[...document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]), select, textarea')]
            .map((e) => parseFloat(getComputedStyle(e).fontSize))`);
          assert.ok(fonts.length > 0, 'the filters have fields');
          if (size.name === 'phone') assert.ok(Math.min(...fonts) >= 16, `field font sizes ${fonts.join(', ')}`);
          const boxes = await page.evaluate<number[][]>(`[...document.querySelectorAll('input[type=checkbox]')]
            .map((e) => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })`);
          assert.ok(boxes.length > 1, 'pending conversions have checkboxes');
          assert.ok(
            boxes.flat().every((v) => v >= 24),
            `checkbox sizes ${JSON.stringify(boxes)}`,
          );
          const selectAll = await page.getByLabel('Select all pending on this page').boundingBox();
          assert.ok(
            selectAll && selectAll.width > 0 && selectAll.x + selectAll.width <= size.width,
            'select all is on the screen',
          );

          await page.goto(`${base}/dashboard/reports`);
          const axis = await page.evaluate<number[]>(`[...document.querySelectorAll('svg.chart text.axis')]
            .map((e) => e.getBoundingClientRect().height)`);
          assert.ok(axis.length > 0, 'the report has a chart with axis labels');
          assert.ok(Math.min(...axis) >= 11, `axis text heights ${axis.join(', ')}`);

          await page.goto(`${base}/dashboard`);
          const caption = await page.locator('table caption', { hasText: /^Top countries/ }).boundingBox();
          const table = await page.getByRole('table', { name: /^Top countries/ }).boundingBox();
          assert.ok(
            caption && table && caption.width >= table.width * 0.8,
            `caption ${caption?.width} of ${table?.width} px`,
          );
        });

        it('draws every chart label inside its chart, a cut one with its full text in a tooltip', async () => {
          const cut: ChartLabels['cut'] = [];
          for (const url of [
            '/dashboard',
            '/dashboard/reports?by=offer&by=partner',
            '/dashboard/reports?time=day',
            '/dashboard/analytics?d1=offer&d2=partner',
          ]) {
            await page.goto(base + url);
            const labels = await page.evaluate<ChartLabels>(CHART_LABELS_SCRIPT);
            assert.ok(labels.labels.length > 0, `${url} has a chart with labels`);
            assert.deepEqual(labels.problems, [], `${url}: labels clipped or overlapping`);
            cut.push(...labels.cut);
          }
          // "Spring Sale with a rather long offer name · Jane Media" does not fit under its bar.
          assert.ok(cut.length > 0, 'some label was cut');
          for (const { shown, title } of cut) {
            assert.ok(title.startsWith(shown.slice(0, -1).trimEnd()), `"${shown}" has its full text "${title}"`);
            assert.ok(title.length > shown.length - 1, `"${title}" is longer than "${shown}"`);
          }
        });

        it('keeps every Copy button on one line, inside the screen', async () => {
          for (const url of [`/dashboard/offers/${ids.offer}`, `/dashboard/partners/${ids.partner}`]) {
            await page.goto(base + url);
            const buttons = await page.evaluate<
              Array<{ lines: number; right: number }>
            >(`[...document.querySelectorAll('button[data-copy]')]
              .filter((b) => !b.hidden)
              .map((b) => {
                const text = document.createRange();
                text.selectNodeContents(b);
                return { lines: text.getClientRects().length, right: b.getBoundingClientRect().right };
              })`);
            assert.ok(buttons.length > 0, `${url} has Copy buttons`);
            assert.deepEqual(
              buttons.filter((b) => b.lines !== 1 || b.right > size.width),
              [],
              `${url}: Copy buttons wrapped or off the screen`,
            );
          }
        });

        it('gives every keyboard stop of a partner without balances a visible size, and says the balance is empty', async () => {
          // The long-named partner has no conversion yet: nothing owed in any currency.
          await page.goto(`${base}/dashboard/partners/${ids.longPartner}`);
          const flat = await page.evaluate<
            string[]
          >(`[...document.querySelectorAll('main a[href], main button, main input, main select, main textarea, main [tabindex]')]
            .filter((e) => !e.hidden && e.getAttribute('tabindex') !== '-1' && e.type !== 'hidden')
            .map((e) => [e, e.getBoundingClientRect()])
            .filter(([, r]) => r.width < 8 || r.height < 8)
            .map(([e, r]) => e.outerHTML.slice(0, 80) + ' ' + r.width + 'x' + r.height)`);
          assert.deepEqual(flat, [], 'keyboard stops too small to see');
          assert.equal(await page.locator('section.table-wrap[aria-label="Balance per currency"]').count(), 0);
          assert.ok(await page.getByText('No balance yet').isVisible(), 'the empty balance is said');
        });

        it("gives a delivery's response body most of the screen's width", async () => {
          await page.goto(`${base}/dashboard/deliveries/${ids.delivery}`);
          const body = page.locator('table pre').first();
          const box = await body.boundingBox();
          assert.ok(box, 'the response body is shown');
          assert.ok(box.width >= size.width * 0.5, `the body is ${box.width} px wide at ${size.width} px`);
          // Its label stands above it, not under it (a stacked card's labels sit beside their values).
          const label = await page.evaluate<{
            shown: boolean;
            position: string;
            bottom: number;
            bodyTop: number;
          }>(`(() => {
            const pre = document.querySelector('table pre');
            const cell = pre.closest('td');
            const style = getComputedStyle(cell, '::before');
            const shown = style.content !== 'none' && style.content !== 'normal' && style.display !== 'none';
            const bottom = cell.getBoundingClientRect().top + (shown ? parseFloat(style.height) : 0);
            return { shown, position: style.position, bottom, bodyTop: pre.getBoundingClientRect().top };
          })()`);
          if (label.shown) assert.equal(label.position, 'static', 'the label takes its own line');
          const { bodyTop, bottom: labelBottom } = label;
          assert.ok(bodyTop >= labelBottom, `the body starts at ${bodyTop} px, its label ends at ${labelBottom} px`);
        });
      });
    }

    describeOrSkip('at other widths and font sizes, and to a screen reader', { skip: false }, () => {
      let context: BrowserContext;
      let page: Page;

      before(async () => {
        context = await browser.newContext({ viewport: { width: 1064, height: 900 } });
        page = await context.newPage();
        await page.goto(`${base}/dashboard/login`);
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${base}/dashboard`);
      });

      after(async () => {
        await context?.close();
      });

      it('never scrolls the partners page sideways from 701 to 1064 px: a wide table scrolls in its own frame', async () => {
        for (const width of [701, 800, 1000, 1064]) {
          await page.setViewportSize({ width, height: 900 });
          for (const url of ['/dashboard/partners', '/dashboard/partners?status=applicant']) {
            await page.goto(base + url);
            // The applicant's row has a ban form with a visually hidden label (what widened the page).
            assert.ok((await page.getByRole('button', { name: /^Ban/ }).count()) > 0, `${url} has a ban form`);
            const sizes = await page.evaluate<number[]>(
              '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
            );
            const [scrollWidth = 0, clientWidth = 0] = sizes;
            assert.ok(scrollWidth <= clientWidth, `${url} at ${width} px: ${scrollWidth} px wide in ${clientWidth} px`);
          }
        }
      });

      it('shows every digit of large amounts on the overview from 768 to 1280 px, without a sideways scroll', async () => {
        // A brand of its own: $1,234,567,890.12 a conversion would change every other page's figures.
        const rich = await env.createBrand('Rich brand');
        const richApi = async (url: string, body: object) => {
          const res = await env.request('POST', url, { key: rich.apiKey, body });
          assert.ok(res.status < 300, `${url}: ${res.status}`);
          return res.body;
        };
        const offer = await richApi('/api/v1/offers', {
          name: 'Big ticket',
          destinationUrl: 'https://shop.example/',
          revenueCents: 123_456_789_012,
          payoutCents: 98_765_432_109,
        });
        const partner = await richApi('/api/v1/partners', { name: 'Whale', email: 'whale@example.com' });
        await richApi('/api/v1/conversions', { offerId: offer.id, partnerId: partner.id, externalTxnId: 'big-1' });
        const richContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        try {
          const richPage = await richContext.newPage();
          await richPage.goto(`${base}/dashboard/login`);
          await richPage.getByLabel('Email').fill(await createDashboardUser(env, rich.id));
          await richPage.getByLabel('Password').fill(PASSWORD);
          await richPage.getByRole('button', { name: 'Sign in' }).click();
          await richPage.waitForURL(`${base}/dashboard`);
          for (const width of [768, 1024, 1280]) {
            await richPage.setViewportSize({ width, height: 900 });
            await richPage.goto(`${base}/dashboard`);
            const sizes = await richPage.evaluate<number[]>(
              '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
            );
            const [scrollWidth = 0, clientWidth = 0] = sizes;
            assert.ok(
              scrollWidth <= clientWidth,
              `overview at ${width} px: ${scrollWidth} px wide in ${clientWidth} px`,
            );
            // Every figure inside its card: none runs under the next card or is cut.
            const cut = await richPage.evaluate<string[]>(`[...document.querySelectorAll('.card dd')]
              .filter((dd) => dd.scrollWidth > dd.clientWidth + 1 || dd.getBoundingClientRect().right > dd.parentElement.getBoundingClientRect().right)
              .map((dd) => dd.textContent + ' ' + dd.scrollWidth + '>' + dd.clientWidth)`);
            assert.deepEqual(cut, [], `overview at ${width} px`);
            const text = await richPage.locator('main').innerText();
            assert.match(text, /\$1,234,567,890\.12/);
          }
        } finally {
          await richContext.close();
        }
      });

      it('names each row button after its row, so a list of buttons does not repeat one name', async () => {
        await env.app.inject({
          method: 'POST',
          url: '/api/public/partners/apply',
          payload: { brandSlug: env.brand.slug, name: 'Second Applicant', email: 'second@example.com' },
        });
        await api('POST', '/api/v1/fraud/blocklist', { type: 'ip', value: '203.0.113.7' });
        await api('POST', '/api/v1/fraud/blocklist', { type: 'userAgent', value: 'BadBot/1.0' });
        await api('POST', `/api/v1/partners/${ids.partner}/postbacks`, {
          url: `${receiver.url}?second={conversion_id}`,
          events: ['conversion.approved'],
        });
        await page.setViewportSize({ width: 1280, height: 900 });
        const checks: Array<[url: string, table: string, expected: RegExp[]]> = [
          ['/dashboard/partners?status=applicant', 'Partners', [/^Approve Applicant Ads$/, /^Ban Second Applicant$/]],
          ['/dashboard/settings/blocklist', 'Blocklist entries', [/^Remove 203\.0\.113\.7$/, /^Remove BadBot\/1\.0$/]],
          [`/dashboard/partners/${ids.partner}`, 'Postback URLs', [/^Send test .*second=/, /^Delete .*cid=/]],
          [`/dashboard/offers/${ids.offer}`, 'Tracking links', [/^Copy Tracking link for Jane Media$/]],
        ];
        for (const [url, table, expected] of checks) {
          await page.goto(base + url);
          const snapshot = await page.locator(`section.table-wrap[aria-label^="${table}"]`).ariaSnapshot();
          const names = [...snapshot.matchAll(/- '?button "([^"]+)"/g)].map((m) => m[1] ?? '');
          assert.ok(names.length >= 2, `${url}: two rows of buttons, got ${snapshot}`);
          assert.equal(new Set(names).size, names.length, `${url}: button names repeat: ${JSON.stringify(names)}`);
          for (const name of expected)
            assert.ok(
              names.some((n) => name.test(n)),
              `${url}: ${name} in ${names}`,
            );
        }
        // What a sighted user reads stays the short label.
        await page.goto(`${base}/dashboard/settings/blocklist`);
        const visible = await page.locator('section.table-wrap button').allInnerTexts();
        assert.deepEqual(
          visible.map((t) => t.trim()),
          visible.map(() => 'Remove'),
        );
      });

      it('brings the focus to what went wrong when a form is refused, each field pointing at its message', async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        await page.goto(`${base}/dashboard/settings/blocklist`);
        await page.getByLabel('Value').fill('not an address');
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Add', exact: true }).click(),
        ]);
        assert.equal(response.status(), 422);
        await page.waitForLoadState('load');
        const focused = await page.evaluate<{ id: string; role: string | null; text: string }>(`({
          id: document.activeElement.id,
          role: document.activeElement.getAttribute('role'),
          text: document.activeElement.textContent,
        })`);
        assert.equal(focused.id, 'error-summary', `focus on ${JSON.stringify(focused)}`);
        assert.equal(focused.role, 'alert');
        assert.match(focused.text, /Value/);
        const field = page.getByLabel('Value');
        assert.equal(await field.getAttribute('aria-invalid'), 'true');
        assert.equal(await field.inputValue(), 'not an address', 'the value entered is kept');
        const described = await page.evaluate<string[]>(`document.getElementById('value')
          .getAttribute('aria-describedby').split(' ')
          .map((id) => document.getElementById(id)?.textContent ?? 'missing #' + id)`);
        assert.deepEqual(described, ['must be an IPv4 or IPv6 address']);
        // The summary's link leads to the field.
        await page.getByRole('link', { name: 'Value' }).click();
        assert.equal(await page.evaluate('location.hash'), '#value');
      });

      it('brings a refused new partner back to the open Add a partner form on a phone, with the focus on what went wrong', async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(`${base}/dashboard/partners`);
        await page.getByText('Add a partner', { exact: true }).click();
        const field = (name: string) => page.locator(`form[action="/dashboard/partners/new"] #${name}`);
        await field('name').fill('Überblick Média');
        await field('email').fill('not-an-email');
        await field('website').fill('ftp://x');
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Add partner' }).click(),
        ]);
        assert.equal(response.status(), 422);
        await page.waitForLoadState('load');
        assert.equal(await page.evaluate('document.activeElement.id'), 'error-summary');
        assert.ok(await field('email').isVisible(), 'the form is open');
        assert.equal(await field('name').inputValue(), 'Überblick Média');
        assert.equal(await field('email').inputValue(), 'not-an-email');
        assert.equal(await field('email').getAttribute('aria-invalid'), 'true');
        assert.equal(await field('website').getAttribute('aria-invalid'), 'true');
        assert.match((await page.locator('#website-error').textContent()) ?? '', /absolute http\(s\) URL/);
        const [scrollWidth = 0, clientWidth = 0] = await page.evaluate<number[]>(
          '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
        );
        assert.ok(scrollWidth <= clientWidth, `${scrollWidth} px wide in ${clientWidth} px`);
      });

      it('brings a refused payout run back to its form, with the values entered and the problem beside its field', async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        const expectRefusal = async (field: string, value: string, problem: RegExp) => {
          const input = page.locator(`form[action="/dashboard/payouts/new"] #${field}`);
          assert.equal(await input.inputValue(), value, `${field} keeps ${value}`);
          assert.equal(await input.getAttribute('aria-invalid'), 'true', `${field} is marked invalid`);
          assert.match((await page.locator(`#${field}-error`).textContent()) ?? '', problem);
          assert.equal(await page.evaluate('document.activeElement.id'), 'error-summary');
          assert.ok(await page.getByRole('button', { name: 'Preview' }).isVisible(), 'the form can be sent again');
        };
        // Typed into the form.
        await page.goto(`${base}/dashboard/payouts`);
        await page.getByLabel('Minimum per currency').fill('12.50');
        const [typed] = await Promise.all([
          page.waitForResponse((r) => r.url().includes('/dashboard/payouts/new')),
          page.getByRole('button', { name: 'Preview' }).click(),
        ]);
        assert.equal(typed.status(), 422);
        await page.waitForLoadState('load');
        await expectRefusal('minimum', '12.50', /whole number/);
        // A day in the future (a form left open past midnight elsewhere, or an edited link).
        const future = await page.goto(`${base}/dashboard/payouts/new?day=2999-01-01&minimum=500`);
        assert.equal(future?.status(), 422);
        await expectRefusal('day', '2999-01-01', /future/);
        assert.equal(await page.getByLabel('Minimum per currency').inputValue(), '500');
        // A partner that is not the brand's.
        const unknown = await page.goto(`${base}/dashboard/payouts/new?day=2026-01-01&partnerId=prt_unknown`);
        assert.equal(unknown?.status(), 422);
        assert.equal(await page.getByLabel('Up to (day)').inputValue(), '2026-01-01');
        assert.equal(await page.getByLabel('Partner').getAttribute('aria-invalid'), 'true');
        assert.match((await page.locator('#partnerId-error').textContent()) ?? '', /no partner/);
        // The confirmation refused (its instant has become the future): back to the form, not a flash.
        await page.goto(`${base}/dashboard/payouts`);
        await page.getByRole('button', { name: 'Preview' }).click();
        await page.waitForURL(/\/dashboard\/payouts\/new/);
        await page.evaluate(`(() => {
          document.querySelector('input[name=upTo]').value = '2999-01-01T00:00:00.000Z';
          document.querySelector('form[action="/dashboard/payouts"] button').disabled = false;
        })()`);
        const [confirmed] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST'),
          page.getByRole('button', { name: /^Create/ }).click(),
        ]);
        assert.equal(confirmed.status(), 422);
        await page.waitForLoadState('load');
        await expectRefusal('day', '2999-01-01', /future/);
      });

      it('keeps the pages with Copy buttons within a 1280 px window at the largest browser font size (200 % text)', async () => {
        await page.setViewportSize({ width: 1280, height: 800 });
        const cdp = await context.newCDPSession(page);
        const wide: string[] = [];
        try {
          // Chromium's "Very large" font size: twice the default 16 px.
          await cdp.send('Page.setFontSizes', { fontSizes: { standard: 32, fixed: 26 } });
          for (const url of [
            '/dashboard/settings',
            `/dashboard/offers/${ids.offer}`,
            `/dashboard/partners/${ids.partner}`,
          ]) {
            await page.goto(base + url);
            const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
            if (overflow <= 0) continue;
            // What sticks out, to say which element to fix.
            const out = await page.evaluate<string[]>(`[...document.querySelectorAll('body *')]
              .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
              .filter((e) => !e.parentElement.closest('.table-wrap, pre'))
              .slice(-3)
              .map((e) => e.outerHTML.slice(0, 60))`);
            wide.push(`${url}: ${overflow} px too wide (${out.join(', ')})`);
          }
        } finally {
          await cdp.send('Page.setFontSizes', { fontSizes: { standard: 16, fixed: 13 } });
          await cdp.detach();
        }
        assert.deepEqual(wide, []);
      });

      it("follows the reader's font size setting instead of fixing the root at 15 px", async () => {
        await page.setViewportSize({ width: 1280, height: 900 });
        const cdp = await context.newCDPSession(page);
        const sizes: Record<number, { root: number; heading: number; field: number }> = {};
        try {
          for (const standard of [16, 24]) {
            await cdp.send('Page.setFontSizes', { fontSizes: { standard } });
            await page.goto(`${base}/dashboard/partners`);
            sizes[standard] = await page.evaluate(`({
              root: parseFloat(getComputedStyle(document.documentElement).fontSize),
              heading: parseFloat(getComputedStyle(document.querySelector('h1')).fontSize),
              field: parseFloat(getComputedStyle(document.querySelector('input#q')).fontSize),
            })`);
          }
        } finally {
          await cdp.send('Page.setFontSizes', { fontSizes: { standard: 16 } });
          await cdp.detach();
        }
        // The default look is unchanged: 15 px text at the browsers' default 16 px.
        assert.equal(sizes[16]?.root, 15);
        assert.equal(sizes[24]?.root, 22.5, `root ${JSON.stringify(sizes)}`);
        assert.ok(
          (sizes[24]?.heading ?? 0) > (sizes[16]?.heading ?? 0) * 1.4,
          `headings scale: ${JSON.stringify(sizes)}`,
        );
        assert.ok((sizes[24]?.field ?? 0) > (sizes[16]?.field ?? 0) * 1.4, `fields scale: ${JSON.stringify(sizes)}`);
      });
    });
  });
}
