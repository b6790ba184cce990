/**
 * The dashboard and the partner portal on a phone (390 × 844), in a real browser: tap targets
 * of tables, pagers and the navigation are 44 × 44 px, a chart opens on its newest days, and
 * no form scrolls sideways with the text at twice its size.
 *
 * SQLite only: what is measured here is the stylesheet and the markup, which do not depend on
 * the database (layout.test.ts runs the pages on both).
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { findPartner } from '../../src/modules/partners/repository.js';
import { openPartnerSession } from '../../src/modules/portal/sessions.js';
import { PORTAL_SESSION_COOKIE } from '../../src/modules/portal/web.js';
import { createTestEnv, describeOrSkip, type TestEnv } from '../helpers.js';
import { CHROMIUM_MISSING, launchChromium } from './browser.js';
import { createDashboardUser, PASSWORD } from './client.js';
import { seedRealisticBrand } from './seed.js';

const PHONE = { width: 390, height: 844 };
/** WCAG 2.5.5 (AAA) and the platforms' guidelines: a finger needs about 44 CSS px. */
const TAP = 44;
/** Sub-pixel layout: a 44 px box may measure 43.99. */
const ROUNDING = 0.5;

/** Run in the page: every visible link and button of the navigation, tables, tabs and pagers. */
const TAP_TARGETS_SCRIPT = `(() => {
  const selector = [
    'header nav a', 'header button', 'table a', 'table button', 'table summary',
    '.pager a', '.tabs a', '.head a', '.head button', '.actions a', '.actions button',
  ].join(', ');
  const found = [];
  for (const el of document.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    const name = (el.getAttribute('aria-label') || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
    found.push({ name, width: Math.round(box.width * 10) / 10, height: Math.round(box.height * 10) / 10 });
  }
  return found;
})()`;

/** Run in the page: the innermost elements reaching past the screen's right edge, named. */
const WIDEST_SCRIPT = `(() => {
  const edge = document.scrollingElement.clientWidth;
  const past = [...document.querySelectorAll('main *, header *')].filter((e) => e.getBoundingClientRect().right > edge + 0.5);
  const innermost = past.filter((e) => !past.some((o) => o !== e && e.contains(o)));
  return innermost.slice(0, 4).map((e) => {
    const id = e.id ? '#' + e.id : '';
    const cls = typeof e.className === 'string' && e.className ? '.' + e.className.split(' ').join('.') : '';
    return e.tagName.toLowerCase() + id + cls + '(' + Math.round(e.getBoundingClientRect().right) + ')';
  }).join(', ');
})()`;

interface Target {
  name: string;
  width: number;
  height: number;
}

describeOrSkip('the dashboard and the portal on a phone (sqlite)', { skip: CHROMIUM_MISSING }, () => {
  let env: TestEnv;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  const ids: Record<string, string> = {};

  before(async () => {
    env = await createTestEnv('sqlite', { env: { TRUST_PROXY: 'true' } });
    const seeded = await seedRealisticBrand(env);
    ids.offer = seeded.offers[0] as string;
    ids.partner = seeded.partners[0] as string;
    const email = await createDashboardUser(env);
    await env.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: PHONE });
    page = await context.newPage();
    await page.goto(`${base}/dashboard/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    const partner = await findPartner(env.ctx.db.read, env.brand.id, ids.partner);
    assert.ok(partner);
    const token = await openPartnerSession(env.ctx, partner);
    await context.addCookies([{ name: PORTAL_SESSION_COOKIE, value: token, domain: '127.0.0.1', path: '/portal' }]);
  });

  after(async () => {
    await context?.close();
    await browser?.close();
    await env?.close();
  });

  const dashboardPages = () => [
    '/dashboard',
    '/dashboard/offers',
    `/dashboard/offers/${ids.offer}`,
    '/dashboard/partners',
    `/dashboard/partners/${ids.partner}`,
    '/dashboard/conversions',
    '/dashboard/clicks',
    '/dashboard/reports?time=day&by=offer',
    '/dashboard/analytics',
    '/dashboard/payouts',
    '/dashboard/webhooks',
    '/dashboard/deliveries',
    '/dashboard/settings',
    '/dashboard/settings/api-keys',
    '/dashboard/settings/blocklist',
  ];
  const portalPages = [
    '/portal',
    '/portal/offers',
    '/portal/conversions',
    '/portal/earnings',
    '/portal/postbacks',
    '/portal/payout-details',
    '/portal/api-keys',
  ];

  it('makes every link and button of the navigation, tables, tabs and pagers at least 44 × 44 px', async () => {
    const small: string[] = [];
    let measured = 0;
    for (const url of [...dashboardPages(), ...portalPages]) {
      const response = await page.goto(base + url);
      assert.equal(response?.status(), 200, url);
      const targets = await page.evaluate<Target[]>(TAP_TARGETS_SCRIPT);
      measured += targets.length;
      for (const t of targets) {
        if (t.width < TAP - ROUNDING || t.height < TAP - ROUNDING)
          small.push(`${url}: "${t.name}" ${t.width}×${t.height}`);
      }
    }
    assert.ok(measured > 100, `measured ${measured} targets`);
    assert.deepEqual(small, []);
  });

  it('opens a chart scrolled to its newest days, on the dashboard and in the portal', async () => {
    for (const url of ['/dashboard', '/dashboard/reports?time=day', '/portal']) {
      await page.goto(base + url);
      // Measured by where the bars are, not by scrollLeft, whose sign depends on the direction.
      const widths = await page.evaluate<number[]>(
        `[...document.querySelectorAll('.chart-scroll')].map((e) => e.scrollWidth - e.clientWidth)`,
      );
      assert.ok(widths.length > 0, `${url} has a chart`);
      assert.ok(
        widths.every((w) => w > 0),
        `${url}: every chart is wider than the phone and scrolls (${widths})`,
      );
      // Each chart's newest bar is on the screen, its oldest scrolled out of view to the left.
      for (let i = 0; i < widths.length; i++) {
        const bars = page.locator('.chart-scroll').nth(i).locator('svg.chart rect');
        const last = await bars.last().boundingBox();
        const first = await bars.first().boundingBox();
        assert.ok(last && last.x >= 0 && last.x + last.width <= PHONE.width, `${url} #${i}: newest bar at ${last?.x}`);
        assert.ok(first && first.x < 0, `${url} #${i}: oldest bar at ${first?.x}, out of view`);
      }
    }
  });

  it('lets no page scroll sideways with the text at twice its size (WCAG 1.4.4)', async () => {
    const wide: string[] = [];
    for (const url of [...dashboardPages(), ...portalPages]) {
      await page.goto(base + url);
      const doubled = await page.evaluate<{ before: number; after: number }>(`(() => {
        const root = document.documentElement;
        const before = parseFloat(getComputedStyle(root).fontSize);
        root.style.fontSize = (before * 2) + 'px';
        return { before, after: parseFloat(getComputedStyle(root).fontSize) };
      })()`);
      assert.equal(doubled.after, doubled.before * 2);
      const overflow = await page.evaluate<number>(
        'document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth',
      );
      if (overflow > 0) wide.push(`${url}: ${overflow} px too wide at ${await page.evaluate<string>(WIDEST_SCRIPT)}`);
    }
    assert.deepEqual(wide, []);
  });
});
