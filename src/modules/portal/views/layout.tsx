/**
 * The portal's pages in the dashboard's shell (same look), with the partner's own
 * navigation. Amounts the partner sees are what they earn; a brand's revenue is never
 * passed to these views.
 */
import type { Flash } from '../../dashboard/session.js';
import { BarePage, Shell } from '../../dashboard/views/layout.js';
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

export interface PortalPageProps {
  title: string;
  section: PortalSection | null;
  session: PartnerSession;
  csrfToken: string;
  flash?: Flash | null;
  children: JSX.Element;
}

export const PORTAL_PRODUCT = 'Affitrack partner portal';

export function PortalPage({ title, section, session, csrfToken, flash, children }: PortalPageProps) {
  return (
    <Shell
      title={`${title} · ${PORTAL_PRODUCT}`}
      home="/portal"
      brandLabel={`${session.brand.name} · partner portal`}
      nav={NAV}
      current={section}
      userLabel={session.partner.name}
      logoutAction="/portal/logout"
      csrfToken={csrfToken}
      flash={flash}
      footer={`Times are shown in ${session.brand.timezone}.`}
    >
      {children}
    </Shell>
  );
}

/** Pages without navigation: sign-in, the invite, errors before sign-in. */
export function PortalBarePage({ title, children }: { title: string; children: JSX.Element }) {
  return (
    <BarePage title={title} product={PORTAL_PRODUCT}>
      {children}
    </BarePage>
  );
}
