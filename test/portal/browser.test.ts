/**
 * The partner portal and the dashboard's Payouts page in Chromium (playwright-core, the
 * system's chromium): a partner accepts an invite, builds and copies a tracking link, reads
 * conversions and earnings, sets up and tests a postback; a second partner and a partner of
 * another brand see none of it; the brand previews and confirms a payout run and marks it paid.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  CHART_LABELS_SCRIPT,
  CHROMIUM_MISSING,
  type ChartLabels,
  launchChromium,
  screenshot,
} from '../dashboard/browser.js';
import { createDashboardUser, PASSWORD } from '../dashboard/client.js';
import { describeOrSkip, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv } from '../payouts/http.js';
import { Receiver } from '../receiver.js';
import { invite, invitedPartner, PARTNER_PASSWORD } from './client.js';

for (const dialect of testedDialects()) {
  describeOrSkip(`partner portal in Chromium (${dialect})`, { skip: CHROMIUM_MISSING }, () => {
    let env: HttpEnv;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let offerId: string;
    let partnerId: string;
    const problems: string[] = [];
    let receiver: Receiver;

    const nav = (name: string) =>
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
    const flash = async () => ((await page.locator('.flash').first().textContent()) ?? '').trim();
    /** The focused element after a refused form, and the texts its aria-describedby points at. */
    const focusAfterRefusal = () =>
      page.evaluate<{ id: string; invalid: string | null; described: string[] }>(`(() => {
        const e = document.activeElement;
        return {
          id: e.id,
          invalid: e.getAttribute('aria-invalid'),
          described: (e.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean)
            .map((id) => document.getElementById(id)?.textContent.trim() ?? 'missing #' + id),
        };
      })()`);

    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      receiver = await Receiver.start(() => ({
        status: 200,
        body: 'received',
        headers: { 'content-type': 'text/plain' },
      }));
      offerId = (
        await env.http('POST', '/api/v1/offers', {
          body: {
            name: 'Winter Boots',
            destinationUrl: 'https://shop.example/',
            revenueCents: 777777,
            payoutCents: 1500,
            conversionStatus: 'approved',
          },
        })
      ).body.id;
      partnerId = (
        await env.http('POST', '/api/v1/partners', { body: { name: 'Browser Partner', email: 'bp@example.com' } })
      ).body.id;
      await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId, sub1: 'browser-sub' } });
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.base });
      page = await context.newPage();
      page.on('dialog', (dialog) => void dialog.accept());
      page.on('console', (message) => {
        const expected = /^Failed to load resource: the server responded with a status of (403|404|422)/;
        if (message.type() === 'error' && !expected.test(message.text())) problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    });

    after(async () => {
      await browser?.close();
      await receiver?.close();
      await env?.close();
    });

    it('sets a password from the invite link and lands on the overview with a chart', async () => {
      const link = await invite(env, partnerId);
      await page.goto(`${env.base}${link}`);
      // A refused password comes back with the focus on the field, which names the problem.
      await page.getByLabel('New password').fill(PARTNER_PASSWORD);
      await page.getByLabel('Repeat the password').fill(`${PARTNER_PASSWORD} typo`);
      await page.getByRole('button', { name: 'Save and sign in' }).click();
      await page.waitForLoadState('load');
      const refused = await focusAfterRefusal();
      assert.equal(refused.id, 'password');
      assert.equal(refused.invalid, 'true');
      assert.match(refused.described.join(' | '), /not the same.*\| At least/, JSON.stringify(refused));
      await page.getByLabel('New password').fill(PARTNER_PASSWORD);
      await page.getByLabel('Repeat the password').fill(PARTNER_PASSWORD);
      await page.getByRole('button', { name: 'Save and sign in' }).click();
      await page.waitForURL(`${env.base}/portal`);
      assert.match(await flash(), /password is set/);
      assert.equal(await page.locator('svg.chart').count(), 2);
      assert.match((await page.locator('main').textContent()) ?? '', /\$15\.00/);
      const cookie = (await context.cookies()).find((c) => c.name === 'affitrack_portal_session');
      assert.equal(cookie?.path, '/portal');
      assert.equal(cookie?.httpOnly, true);
      await screenshot(page, 'portal-overview');
    });

    it('builds a tracking link with subs and copies it', async () => {
      await nav('Offers').click();
      await page.getByRole('link', { name: 'Winter Boots' }).click();
      await page.getByLabel('sub1').fill('newsletter');
      await page.getByLabel('sub2').fill('a b');
      await page.getByRole('button', { name: 'Build link' }).click();
      const link = await page.getByLabel('Your tracking link', { exact: true }).inputValue();
      assert.equal(link, `http://127.0.0.1:3000/t/${offerId}/${partnerId}?sub1=newsletter&sub2=a+b`);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), link);
    });

    it('keeps each Copy button on one line on a phone and a desk', async () => {
      try {
        for (const width of [390, 1280]) {
          await page.setViewportSize({ width, height: 900 });
          for (const path of ['/portal/offers', `/portal/offers/${offerId}`]) {
            await page.goto(`${env.base}${path}`);
            const lines = await page.evaluate<number[]>(`[...document.querySelectorAll('button[data-copy]')]
              .filter((b) => !b.hidden)
              .map((b) => {
                const text = document.createRange();
                text.selectNodeContents(b);
                return text.getClientRects().length;
              })`);
            assert.ok(lines.length > 0, `${path} has a Copy button`);
            assert.deepEqual(
              lines,
              lines.map(() => 1),
              `${path} at ${width} px: lines of each Copy button`,
            );
          }
        }
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it("keeps a phone card's column names inside their cells, clear of the next label and its field", async () => {
      try {
        await page.setViewportSize({ width: 390, height: 900 });
        await page.goto(`${env.base}/portal/offers`);
        const labels = await page.evaluate<Array<{ name: string; label: number; cell: number; line: number }>>(`
          [...document.querySelectorAll('table.stack td[data-label], table.stack th[data-label]')].flatMap((cell) => {
            const style = getComputedStyle(cell, '::before');
            if (style.content === 'none' || style.content === 'normal' || style.display === 'none') return [];
            return [{
              name: cell.getAttribute('data-label'),
              label: parseFloat(style.height),
              cell: cell.getBoundingClientRect().height,
              line: parseFloat(style.lineHeight),
            }];
          })`);
        // "Payout per conversion" takes two lines in a card's label column: the case that ran over.
        const twoLines = labels.filter((l) => l.label > l.line * 1.5);
        assert.ok(twoLines.length > 0, `a column name of two lines: ${JSON.stringify(labels)}`);
        assert.deepEqual(
          labels.filter((l) => l.label > l.cell + 0.5),
          [],
          'labels taller than their cell run over the next one',
        );
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it('lists own conversions and earnings without the brand revenue', async () => {
      await nav('Conversions').click();
      await page.getByLabel('Status').selectOption('approved');
      await page.getByRole('button', { name: 'Filter' }).click();
      const text = (await page.locator('main').textContent()) ?? '';
      assert.match(text, /browser-sub/);
      assert.match(text, /\$15\.00/);
      assert.doesNotMatch(text, /7,777\.77/);
      await nav('Earnings').click();
      assert.match((await page.locator('main').textContent()) ?? '', /\$15\.00/);
    });

    it('adds a postback URL and sends a test to a real receiver', async () => {
      await nav('Postbacks').click();
      await page.getByLabel('URL').fill(`${receiver.origin}/pb?c={click_id}&p={payout}`);
      await page.getByRole('button', { name: 'Add' }).click();
      assert.match(await flash(), /added/);
      await page
        .getByRole('button', { name: `Send test ${receiver.origin}/pb?c={click_id}&p={payout}`, exact: true })
        .click();
      assert.match(await flash(), /HTTP 200 in \d+ ms\. Response: received/);
      assert.deepEqual(
        receiver.requests.map((r) => r.path),
        ['/pb?c=clk_TEST&p=10.00'],
      );
      await screenshot(page, 'portal-postbacks');
    });

    it('saves payout details and creates an API key shown once', async () => {
      await nav('Payout details').click();
      await page.getByLabel('Method').selectOption('Bank transfer (IBAN)');
      // Nine lines within the field's maxlength as the browser counts them (a line break is one
      // character, though it is posted as CRLF): saved, not refused as too long.
      const account = Array(9).fill('IBAN DE89 3704 0044 0532 0130 00 Holder Name Street 12').join('\n');
      await page.getByLabel('Account').fill(account);
      assert.equal(
        await page.getByLabel('Account').evaluate((e) => (e as unknown as { textLength: number }).textLength),
        494,
      );
      await page.getByRole('button', { name: 'Save' }).click();
      assert.match(await flash(), /saved/);
      assert.equal(await page.getByLabel('Account').inputValue(), account);
      // Past the maxlength (a scripted value): back with the text typed, the problem beside the field.
      await page.getByLabel('Account').evaluate((e) => e.removeAttribute('maxlength'));
      await page.getByLabel('Account').fill(`${account}\nDE89 and more`);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForLoadState('load');
      const tooLong = await focusAfterRefusal();
      assert.equal(tooLong.id, 'error-summary', JSON.stringify(tooLong));
      assert.equal(await page.getByLabel('Account').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.getByLabel('Account').inputValue(), `${account}\nDE89 and more`);
      assert.equal(await page.getByLabel('Method').inputValue(), 'Bank transfer (IBAN)');
      await page.getByLabel('Account').fill('DE89 3704 0044 0532 0130 00');
      await page.getByRole('button', { name: 'Save' }).click();
      assert.match(await flash(), /saved/);
      await nav('API keys').click();
      // A name past the field's maxlength (a pasted or scripted value) is refused beside the field.
      await page.getByLabel('Key name').evaluate((e) => e.removeAttribute('maxlength'));
      await page.getByLabel('Key name').fill('k'.repeat(101));
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.waitForLoadState('load');
      const refused = await focusAfterRefusal();
      assert.equal(refused.id, 'error-summary', JSON.stringify(refused));
      assert.equal(await page.locator('#error-summary').getAttribute('role'), 'alert');
      assert.equal(await page.getByLabel('Key name').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.getByLabel('Key name').inputValue(), 'k'.repeat(101));
      await page.getByLabel('Key name').fill('Browser key');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = await page.getByLabel('API key “Browser key”', { exact: true }).inputValue();
      assert.match(secret, /^afp_/);
      // The row's Revoke names its key to a screen reader; the button still reads "Revoke".
      const revoke = page.getByRole('button', { name: `Revoke Browser key (${secret.slice(0, 10)}…)`, exact: true });
      assert.equal((await revoke.innerText()).trim(), 'Revoke');
      const res = await env.http('GET', '/api/v1/partner/offers', { key: secret });
      assert.equal(res.status, 200);
    });

    it("shows a second partner and another brand's partner none of the first partner's data", async () => {
      const second = await invitedPartner(env, 'Second Browser');
      const otherBrand = await env.createBrand('Browser Other Brand');
      const third = await invitedPartner(env, 'Third Browser', otherBrand.apiKey);
      for (const [email, label] of [
        [second.email, 'second'],
        [third.email, 'other brand'],
      ] as const) {
        const other = await browser.newContext();
        const tab = await signedInTab(env, other, email);
        for (const path of [
          '/portal',
          '/portal/conversions',
          '/portal/earnings',
          '/portal/postbacks',
          '/portal/payout-details',
          '/portal/api-keys',
        ]) {
          await tab.goto(`${env.base}${path}`);
          const html = await tab.content();
          for (const secret of [partnerId, 'browser-sub', 'DE89', 'Browser key', `127.0.0.1:${receiver.port}`]) {
            assert.ok(!html.includes(secret), `${label} sees ${secret} on ${path}`);
          }
        }
        const response = await tab.goto(`${env.base}/dashboard`);
        assert.equal(new URL(tab.url()).pathname, '/dashboard/login', `${label}: ${response?.status()}`);
        await other.close();
      }
    });

    it('lets the brand preview a payout run, confirm it, see the partner details and mark it paid', async () => {
      const email = await createDashboardUser(env);
      const brandContext = await browser.newContext();
      const tab = await brandContext.newPage();
      tab.on('dialog', (dialog) => void dialog.accept());
      await tab.goto(`${env.base}/dashboard/login`);
      await tab.getByLabel('Email').fill(email);
      await tab.getByLabel('Password').fill(PASSWORD);
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.waitForURL(`${env.base}/dashboard`);
      await tab.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Payouts', exact: true }).click();
      await tab.getByRole('button', { name: 'Preview' }).click();
      const preview = (await tab.locator('main').textContent()) ?? '';
      assert.match(preview, /Browser Partner/);
      assert.equal(await env.ctx.db.read.selectFrom('payouts').select('id').executeTakeFirst(), undefined);
      await tab.getByRole('button', { name: /^Create 1 payout$/ }).click();
      assert.match(((await tab.locator('.flash').first().textContent()) ?? '').trim(), /Created 1 payout/);
      await tab.getByRole('link', { name: /^pay_/ }).first().click();
      assert.match((await tab.locator('main').textContent()) ?? '', /DE89 3704/);
      await tab.getByLabel('Payment reference').fill('SEPA-1');
      await tab.getByRole('button', { name: 'Mark paid' }).click();
      assert.match(((await tab.locator('.flash').first().textContent()) ?? '').trim(), /marked paid/);
      await screenshot(tab, 'dashboard-payout');
      await brandContext.close();
      await nav('Earnings').click();
      assert.match((await page.locator('main').textContent()) ?? '', /SEPA-1/);
    });

    it("draws a large earner's chart amounts whole, inside the chart", async () => {
      const big = await invitedPartner(env, 'Big Earner');
      const earned = await env.http('POST', '/api/v1/conversions', {
        body: { offerId, partnerId: big.partnerId, payoutCents: 1_234_567 },
      });
      assert.equal(earned.status, 201, JSON.stringify(earned.body));
      const other = await browser.newContext();
      try {
        const tab = await signedInTab(env, other, big.email);
        for (const width of [390, 1280]) {
          await tab.setViewportSize({ width, height: 900 });
          await tab.reload();
          const chart = await tab.evaluate<ChartLabels>(CHART_LABELS_SCRIPT);
          // $12,345.67 in a day: the earnings axis reads up to $14,000.00 in full.
          assert.ok(
            chart.labels.some((l) => /^\$1\d,\d{3}\.00$/.test(l)),
            `an amount over $10,000 on the axis: ${chart.labels}`,
          );
          assert.deepEqual(chart.problems, [], `at ${width} px`);
        }
      } finally {
        await other.close();
      }
    });

    it('fits every page at 390 and 1280 px with long unbroken partner and offer names, sign-out on the screen', async () => {
      // The API and the public application form take names of up to 200 characters.
      const longPartner = await invitedPartner(env, `Partner${'n'.repeat(120)}`);
      const longOffer = (
        await env.http('POST', '/api/v1/offers', {
          body: {
            name: `Offer-with-an-extremely-long-unbroken-name-${'z'.repeat(150)}`,
            destinationUrl: 'https://shop.example/',
            payoutCents: 100,
            conversionStatus: 'approved',
          },
        })
      ).body.id;
      const recorded = await env.http('POST', '/api/v1/conversions', {
        body: { offerId: longOffer, partnerId: longPartner.partnerId, sub1: 's'.repeat(200) },
      });
      assert.equal(recorded.status, 201, JSON.stringify(recorded.body));
      const other = await browser.newContext();
      try {
        const tab = await signedInTab(env, other, longPartner.email);
        const wide: string[] = [];
        for (const width of [390, 1280]) {
          await tab.setViewportSize({ width, height: 900 });
          for (const path of [
            '/portal',
            '/portal/offers',
            `/portal/offers/${longOffer}`,
            '/portal/conversions',
            '/portal/earnings',
            '/portal/postbacks',
            '/portal/payout-details',
            '/portal/api-keys',
          ]) {
            await tab.goto(`${env.base}${path}`);
            const overflow = await tab.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
            if (overflow > 0) wide.push(`${path} at ${width} px: ${overflow} px too wide`);
            const signOut = await tab.getByRole('button', { name: 'Sign out' }).boundingBox();
            if (!signOut || signOut.x < 0 || signOut.x + signOut.width > width) {
              wide.push(`${path} at ${width} px: Sign out at ${JSON.stringify(signOut)}`);
            }
          }
        }
        assert.deepEqual(wide, []);
        // The name cut with an ellipsis in the header is still whole for a screen reader and a tooltip.
        await tab.goto(`${env.base}/portal`);
        const shown = tab.locator('header .user span').first();
        assert.equal(await shown.textContent(), `Partner${'n'.repeat(120)}`);
        assert.equal(await shown.getAttribute('title'), `Partner${'n'.repeat(120)}`);
      } finally {
        await other.close();
      }
    });

    it('wraps the API address on the API keys page at 320 px (400 % zoom) instead of scrolling sideways', async () => {
      try {
        await page.setViewportSize({ width: 320, height: 600 });
        await page.goto(`${env.base}/portal/api-keys`);
        const address = page.locator('main p code', { hasText: '/api/v1/partner/report' });
        assert.match((await address.textContent()) ?? '', /^GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/partner\/report$/);
        const box = await address.boundingBox();
        assert.ok(box && box.x + box.width <= 320, `the address ends at ${box && box.x + box.width} px`);
        const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
        assert.ok(overflow <= 0, `the page is ${overflow} px wider than 320 px`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it('signs out, and ran without script errors or CSP violations', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/portal\/login/);
      await page.goto(`${env.base}/portal/earnings`);
      assert.equal(new URL(page.url()).pathname, '/portal/login');
      await page.getByLabel('Email').fill('bp@example.com');
      await page.getByLabel('Password').fill('not the password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForLoadState('load');
      const refused = await focusAfterRefusal();
      assert.equal(refused.id, 'email');
      assert.equal(refused.invalid, 'true');
      assert.deepEqual(refused.described, ['The email or password is not correct.']);
      assert.deepEqual(problems, []);
    });
  });
}

/** A page of `context` signed in to the portal as `email` (with the test partners' password). */
async function signedInTab(env: HttpEnv, context: BrowserContext, email: string): Promise<Page> {
  const tab = await context.newPage();
  await tab.goto(`${env.base}/portal/login`);
  await tab.getByLabel('Email').fill(email);
  await tab.getByLabel('Password').fill(PARTNER_PASSWORD);
  await tab.getByRole('button', { name: 'Sign in' }).click();
  await tab.waitForURL(`${env.base}/portal`);
  return tab;
}
