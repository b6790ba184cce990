/**
 * The public event catalogue, generated from the same TypeBox schemas that type the
 * payload builders (events/schemas.ts). Examples are typed by those schemas too, and a
 * test validates them against the published JSON Schema.
 */
import { EVENT_SCHEMAS, type EventData, type EventName } from '../events/schemas.js';

const DESCRIPTIONS: Record<EventName, string> = {
  'conversion.created':
    'A new conversion is recorded; its status is pending or approved depending on the offer configuration.',
  'conversion.approved': 'A pending conversion is approved, manually or automatically after the hold time.',
  'conversion.rejected': 'A pending conversion is rejected.',
  'partner.applied': 'Someone submits the public application form.',
  'partner.approved': 'A partner becomes active (approved applicant, or added directly by the brand).',
  'partner.banned': 'A partner is banned, manually or by an automation rule.',
  'fraud.high_risk': "A click's fraud score exceeds the brand's threshold.",
  'cap.reached': 'A daily, weekly, monthly or global conversion cap of an offer is hit (once per cap and period).',
  'payout.created': 'A payout run created a payout for a partner in one currency (POST /api/v1/payouts).',
  'payout.paid': 'A payout was marked paid (POST /api/v1/payouts/:id/mark-paid).',
  'payout.cancelled':
    'A created payout was cancelled before it was paid (POST /api/v1/payouts/:id/cancel); its conversions are payable again.',
  'webhook.subscription.failing':
    "One of the brand's other subscriptions keeps failing: 50 %, 75 % and 90 % of the way to being disabled automatically.",
  'webhook.subscription.disabled':
    "One of the brand's other subscriptions was disabled, automatically after its deliveries kept failing or by hand.",
};

const subscriptionHealth = {
  subscriptionId: 'sub_01JD0000000000000000000006',
  url: 'https://hooks.example.com/affitrack',
  consecutiveFailures: 20,
  failingSince: '2025-11-16T10:00:00.000Z',
  lastSuccessAt: '2025-11-16T09:58:12.000Z',
  lastFailureAt: '2025-11-21T10:00:00.000Z',
};

const payout = {
  payoutId: 'pay_01JD0000000000000000000005',
  partnerId: 'prt_01JD0000000000000000000002',
  currency: 'USD',
  amountCents: 18000,
  conversionCount: 30,
  upTo: '2025-11-30T23:59:59.999Z',
};

const conversion = {
  conversionId: 'conv_01JD0000000000000000000001',
  partnerId: 'prt_01JD0000000000000000000002',
  offerId: 'off_01JD0000000000000000000003',
  revenueCents: 1000,
  payoutCents: 600,
  currency: 'USD',
  metadata: { order_source: 'newsletter' },
};
const partner = {
  partnerId: 'prt_01JD0000000000000000000002',
  name: 'Jane Doe Media',
  email: 'jane@example.com',
  website: 'https://janedoe.example',
  metadata: { crm_id: '8841' },
};

const EXAMPLES: { [E in EventName]: EventData<E> } = {
  'conversion.created': { ...conversion, status: 'pending', sub1: 'campaign-42', externalTxnId: 'order-1001' },
  'conversion.approved': {
    ...conversion,
    status: 'approved',
    sub1: 'campaign-42',
    externalTxnId: 'order-1001',
    approvedAt: '2025-11-22T10:00:00.000Z',
    rejectedAt: null,
    rejectionReason: null,
    approvedBy: 'hold_expired',
  },
  'conversion.rejected': {
    ...conversion,
    status: 'rejected',
    sub1: 'campaign-42',
    externalTxnId: 'order-1001',
    approvedAt: null,
    rejectedAt: '2025-11-22T10:00:00.000Z',
    rejectionReason: 'Order refunded',
    approvedBy: null,
  },
  'partner.applied': { ...partner, status: 'applicant' },
  'partner.approved': { ...partner, status: 'active' },
  'partner.banned': { ...partner, status: 'banned', reason: 'Incentivised traffic', bannedBy: 'manual' },
  'fraud.high_risk': {
    clickId: 'clk_01JD0000000000000000000004',
    offerId: 'off_01JD0000000000000000000003',
    partnerId: 'prt_01JD0000000000000000000002',
    score: 90,
    threshold: 75,
    signals: ['high_risk_score', 'datacenter_ip', 'bot_user_agent'],
    ip: '203.0.113.7',
    userAgent: 'curl/8.5.0',
  },
  'cap.reached': {
    offerId: 'off_01JD0000000000000000000003',
    cap: 'daily',
    limit: 100,
    count: 100,
    periodStart: '2025-11-21T00:00:00.000Z',
    periodEnd: '2025-11-22T00:00:00.000Z',
  },
  'payout.created': { ...payout, status: 'created' },
  'payout.paid': { ...payout, status: 'paid', paidAt: '2025-12-02T09:30:00.000Z', reference: 'SEPA-2025-12-02-17' },
  'payout.cancelled': { ...payout, status: 'cancelled', cancelledAt: '2025-12-02T08:15:00.000Z' },
  'webhook.subscription.failing': {
    ...subscriptionHealth,
    consecutiveFailures: 18,
    status: 'active',
    progressPercent: 90,
    disableAfterDays: 5,
    disableAfterDeliveries: 20,
  },
  'webhook.subscription.disabled': {
    ...subscriptionHealth,
    status: 'disabled',
    disabledAt: '2025-11-21T10:00:00.000Z',
    disabledReason: 'Every delivery failed for 5 days (20 deliveries in a row).',
    disabledBy: 'automatic',
  },
};

export function eventCatalogue() {
  return {
    data: (Object.keys(EVENT_SCHEMAS) as EventName[]).map((name) => ({
      name,
      description: DESCRIPTIONS[name],
      // A plain JSON copy: TypeBox schemas carry symbol keys that are not part of JSON Schema.
      schema: JSON.parse(JSON.stringify(EVENT_SCHEMAS[name])) as Record<string, unknown>,
      example: {
        id: 'evt_01JD0000000000000000000000',
        event: name,
        createdAt: '2025-11-21T10:00:00.000Z',
        brandId: 'brd_01JD0000000000000000000000',
        data: EXAMPLES[name],
      },
    })),
  };
}
