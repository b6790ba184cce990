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
