/**
 * Pieces of the end-to-end test: Debian's chromium driven by playwright-core (never a
 * downloaded browser), screenshots under test-results/screenshots/, and a real HTTP
 * receiver for webhook deliveries.
 */
import { existsSync, mkdirSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { Receiver } from '../receiver.js';

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM_MISSING = existsSync(CHROMIUM_PATH)
  ? false
  : `chromium is not installed at ${CHROMIUM_PATH} (apt-get install -y chromium); skipping the browser test`;

const SCREENSHOT_DIR = path.resolve('test-results/screenshots');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What `chartLabelProblems` finds in the page's SVG charts. */
export interface ChartLabels {
  /** The labels drawn (y and x axes, every chart), as shown. */
  labels: string[];
  /** Labels outside their chart's box (clipped), or overlapping their neighbour. */
  problems: string[];
  /** Labels cut with an ellipsis, with the full text of their tooltip. */
  cut: Array<{ shown: string; title: string }>;
}

/** Run in the page: every axis label of every `svg.chart`, measured. */
export const CHART_LABELS_SCRIPT = `(() => {
  const result = { labels: [], problems: [], cut: [] };
  for (const svg of document.querySelectorAll('svg.chart')) {
    const box = svg.viewBox.baseVal;
    const below = [];
    for (const text of svg.querySelectorAll('text.axis')) {
      const b = text.getBBox();
      const shown = [...text.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('');
      result.labels.push(shown);
      if (b.x < box.x - 0.5 || b.x + b.width > box.x + box.width + 0.5) {
        result.problems.push(shown + ' spans ' + b.x.toFixed(1) + '..' + (b.x + b.width).toFixed(1));
      }
      if (shown.endsWith('…')) result.cut.push({ shown, title: text.querySelector('title')?.textContent ?? '' });
      if (text.getAttribute('text-anchor') === 'middle') below.push([shown, b]);
    }
    for (let i = 1; i < below.length; i++) {
      const [a, ab] = below[i - 1];
      const [c, cb] = below[i];
      if (cb.x < ab.x + ab.width) result.problems.push(a + ' overlaps ' + c);
    }
  }
  return result;
})()`;

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

export interface ReceivedHook {
  headers: IncomingHttpHeaders;
  body: string;
}

/** The tests' receiver (test/receiver.ts); `answer(n)` decides the status and body of the n-th request (0-based). */
export async function startReceiver(answer: (index: number) => { status: number; body: string }) {
  const receiver = await Receiver.start((_request, index) => {
    const reply = answer(index);
    return { status: reply.status, headers: { 'content-type': 'application/json' }, body: reply.body };
  });
  return {
    url: `${receiver.origin}/hooks`,
    get received(): ReceivedHook[] {
      return receiver.requests.map((r) => ({ headers: r.headers, body: r.body.toString('utf8') }));
    },
    close: () => receiver.close(),
  };
}
