/**
 * The portal's page shell: the dashboard's stylesheet, script and components (same look),
 * with the partner's own navigation. Amounts the partner sees are what they earn; a
 * brand's revenue is never passed to these views.
 */
import { dashboardAssets } from '../../dashboard/assets.js';
import type { Flash } from '../../dashboard/session.js';
import { CsrfField } from '../../dashboard/views/components.js';
import { FlashMessage } from '../../dashboard/views/layout.js';
import type { PartnerSession } from '../sessions.js';

export type PortalSection =
  | 'overview'
  | 'offers'
  | 'conversions'
  | 'earnings'
  | 'postbacks'
  | 'payout-details'
  | 'api-keys';

const NAV: Array<[PortalSection, string, string]> = [
  ['overview', 'Overview', '/portal'],
  ['offers', 'Offers', '/portal/offers'],
  ['conversions', 'Conversions', '/portal/conversions'],
  ['earnings', 'Earnings', '/portal/earnings'],
  ['postbacks', 'Postbacks', '/portal/postbacks'],
  ['payout-details', 'Payout details', '/portal/payout-details'],
  ['api-keys', 'API keys', '/portal/api-keys'],
];

function Head({ title }: { title: string }) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width,initial-scale=1" />
      <title safe>{title} · Affitrack partner portal</title>
      <link rel="icon" href={dashboardAssets.url('icon.svg')} type="image/svg+xml" />
      <link rel="stylesheet" href={dashboardAssets.url('app.css')} />
      <script type="module" src={dashboardAssets.url('app.js')}></script>
    </head>
  );
}

export interface PortalPageProps {
  title: string;
  section: PortalSection | null;
  session: PartnerSession;
  csrfToken: string;
  flash?: Flash | null;
  children: JSX.Element;
}

export function PortalPage({ title, section, session, csrfToken, flash, children }: PortalPageProps) {
  return (
    <html lang="en">
      <Head title={title} />
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <div class="bar">
            <a class="logo" href="/portal">
              Affitrack
            </a>
            <span class="brand" safe>
              {session.brand.name} · partner portal
            </span>
            <nav aria-label="Main">
              <ul>
                {NAV.map(([key, label, href]) => (
                  <li>
                    <a href={href} aria-current={key === section ? 'page' : undefined} safe>
                      {label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
            <div class="user">
              <span safe>{session.partner.name}</span>
              <form method="post" action="/portal/logout" class="inline">
                <CsrfField token={csrfToken} />
                <button type="submit">Sign out</button>
              </form>
            </div>
          </div>
        </header>
        <main id="main" tabindex="-1">
          <div id="live" class="visually-hidden" aria-live="polite"></div>
          <FlashMessage flash={flash} />
          {children}
        </main>
        <footer safe>Times are shown in {session.brand.timezone}.</footer>
      </body>
    </html>
  );
}

/** Pages without navigation: sign-in, the invite, errors before sign-in. */
export function PortalBarePage({ title, children }: { title: string; children: JSX.Element }) {
  return (
    <html lang="en">
      <Head title={title} />
      <body>
        <main id="main">{children}</main>
      </body>
    </html>
  );
}
