/** The page shell: head, skip link, navigation, flash message, footer. */
import type { DashboardSession } from '../users/sessions.js';
import { assetUrl } from './assets.js';
import { html, type Renderable, type SafeHtml } from './html.js';

export type Section =
  | 'overview'
  | 'offers'
  | 'partners'
  | 'conversions'
  | 'reports'
  | 'webhooks'
  | 'deliveries'
  | 'settings';

const NAV: Array<[Section, string, string]> = [
  ['overview', 'Overview', '/dashboard'],
  ['offers', 'Offers', '/dashboard/offers'],
  ['partners', 'Partners', '/dashboard/partners'],
  ['conversions', 'Conversions', '/dashboard/conversions'],
  ['reports', 'Reports', '/dashboard/reports'],
  ['webhooks', 'Webhooks', '/dashboard/webhooks'],
  ['deliveries', 'Delivery log', '/dashboard/deliveries'],
  ['settings', 'Settings', '/dashboard/settings'],
];

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

function head(title: string): SafeHtml {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · Affitrack</title>
<link rel="icon" href="${assetUrl('icon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl('app.css')}">
<script src="${assetUrl('app.js')}" defer></script></head>`;
}

export function flashMessage(flash: Flash | null | undefined): SafeHtml {
  if (!flash) return html``;
  return flash.kind === 'ok'
    ? html`<div class="flash ok" role="status">${flash.text}</div>`
    : html`<div class="flash error" role="alert">${flash.text}</div>`;
}

export interface PageOptions {
  title: string;
  /** The navigation entry to mark as current; null on error pages. */
  section: Section | null;
  session: DashboardSession;
  body: Renderable;
  flash?: Flash | null;
}

export function page({ title, section, session, body, flash }: PageOptions): string {
  const { brand } = session;
  const nav = NAV.map(
    ([key, label, href]) =>
      html`<li><a href="${href}"${key === section ? html` aria-current="page"` : ''}>${label}</a></li>`,
  );
  return html`${head(`${title} · ${brand.name}`)}<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="bar">
<a class="logo" href="/dashboard">Affitrack</a><span class="brand">${brand.name}</span>
<nav aria-label="Main"><ul>${nav}</ul></nav>
<div class="user"><span>${session.email}</span>
<form method="post" action="/dashboard/logout" class="inline"><input type="hidden" name="_csrf" value="${session.csrfToken}"><button type="submit">Sign out</button></form>
</div></div></header>
<main id="main" tabindex="-1">
<div id="live" class="visually-hidden" aria-live="polite"></div>
${flashMessage(flash)}${body}
</main>
<footer>Times are shown in ${brand.timezone}; report amounts in ${brand.currency}.</footer>
</body></html>`.value;
}

/** Pages without navigation: sign-in and errors before a session exists. */
export function barePage(title: string, body: Renderable): string {
  return html`${head(title)}<body><main id="main">${body}</main></body></html>`.value;
}
