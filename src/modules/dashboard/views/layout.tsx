/**
 * The page shell shared by the dashboard and the partner portal (same look, own navigation):
 * head, skip link, top bar with navigation and sign-out, flash message, footer.
 */
import { escapeHtml } from '@kitajs/html';
import { dashboardAssets } from '../assets.js';
import type { Flash, PageSession } from '../session.js';
import { CsrfField } from './components.js';

export type Section =
  | 'overview'
  | 'offers'
  | 'partners'
  | 'conversions'
  | 'clicks'
  | 'reports'
  | 'analytics'
  | 'webhooks'
  | 'deliveries'
  | 'payouts'
  | 'settings';

const NAV: Array<[Section, string, string]> = [
  ['overview', 'Overview', '/dashboard'],
  ['offers', 'Offers', '/dashboard/offers'],
  ['partners', 'Partners', '/dashboard/partners'],
  ['conversions', 'Conversions', '/dashboard/conversions'],
  ['clicks', 'Clicks', '/dashboard/clicks'],
  ['reports', 'Reports', '/dashboard/reports'],
  ['analytics', 'Analytics', '/dashboard/analytics'],
  ['webhooks', 'Webhooks', '/dashboard/webhooks'],
  ['deliveries', 'Delivery log', '/dashboard/deliveries'],
  ['payouts', 'Payouts', '/dashboard/payouts'],
  ['settings', 'Settings', '/dashboard/settings'],
];

export function Document({ title, children }: { title: string; children: JSX.Element }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        <title safe>{title}</title>
        <link rel="icon" href={dashboardAssets.url('icon.svg')} type="image/svg+xml" />
        <link rel="stylesheet" href={dashboardAssets.url('app.css')} />
        <script type="module" src={dashboardAssets.url('app.js')}></script>
      </head>
      {children}
    </html>
  );
}

/** `id` lets the fields a refusal is about point at it (`aria-describedby`). */
export function FlashMessage({ flash, id }: { flash: Flash | null | undefined; id?: string }) {
  if (!flash) return '';
  return flash.kind === 'ok' ? (
    <div class="flash ok" role="status" safe>
      {flash.text}
    </div>
  ) : (
    <div class="flash error" role="alert" id={id} safe>
      {flash.text}
    </div>
  );
}

export interface ShellProps {
  /** The whole <title>. */
  title: string;
  home: string;
  /** Beside the logo: whose space this is. */
  brandLabel: string;
  nav: ReadonlyArray<readonly [key: string, label: string, href: string]>;
  /** The navigation entry to mark as current; null on error pages. */
  current: string | null;
  userLabel: string;
  logoutAction: string;
  csrfToken: string;
  flash?: Flash | null | undefined;
  footer: string;
  children: JSX.Element;
}

export function Shell({ children, ...props }: ShellProps) {
  return (
    <Document title={props.title}>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <div class="bar">
            <a class="logo" href={props.home}>
              Affitrack
            </a>
            <span class="brand" safe>
              {props.brandLabel}
            </span>
            <nav aria-label="Main">
              <ul>
                {props.nav.map(([key, label, href]) => (
                  <li>
                    <a href={href} aria-current={key === props.current ? 'page' : undefined} safe>
                      {label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
            <div class="user">
              <span title={escapeHtml(props.userLabel)} safe>
                {props.userLabel}
              </span>
              <form method="post" action={props.logoutAction} class="inline">
                <CsrfField token={props.csrfToken} />
                <button type="submit">Sign out</button>
              </form>
            </div>
          </div>
        </header>
        <main id="main" tabindex="-1">
          <div id="live" class="visually-hidden" aria-live="polite"></div>
          <FlashMessage flash={props.flash} />
          {children}
        </main>
        <footer safe>{props.footer}</footer>
      </body>
    </Document>
  );
}

/** Pages without navigation: sign-in, invites and errors before a session exists. */
export function BarePage({
  title,
  product = 'Affitrack',
  children,
}: {
  title: string;
  product?: string;
  children: JSX.Element;
}) {
  return (
    <Document title={`${title} · ${product}`}>
      <body>
        <main id="main">{children}</main>
      </body>
    </Document>
  );
}

export interface PageProps {
  title: string;
  /** The navigation entry to mark as current; null on error pages. */
  section: Section | null;
  session: PageSession;
  flash?: Flash | null;
  children: JSX.Element;
}

export function Page({ title, section, session, flash, children }: PageProps) {
  const { brand } = session;
  return (
    <Shell
      title={`${title} · ${brand.name} · Affitrack`}
      home="/dashboard"
      brandLabel={brand.name}
      nav={NAV}
      current={section}
      userLabel={session.email}
      logoutAction="/dashboard/logout"
      csrfToken={session.csrfToken}
      flash={flash}
      footer={`Times are shown in ${brand.timezone}; amounts in their own currency (brand currency ${brand.currency}).`}
    >
      {children}
    </Shell>
  );
}
