/**
 * Pieces of the end-to-end test: Debian's chromium driven by playwright-core (never a
 * downloaded browser), screenshots under test-results/screenshots/, and a real HTTP
 * receiver for webhook deliveries.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

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

/** A node:http receiver; `answer(n)` decides the status and body of the n-th request (0-based). */
export async function startReceiver(answer: (index: number) => { status: number; body: string }) {
  const received: ReceivedHook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = answer(received.length);
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
