/**
 * The `data` of every webhook event, as TypeBox schemas. The code that builds payloads is
 * typed by these schemas and the public event catalogue is generated from them, so what
 * the catalogue documents and what is sent cannot drift apart.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

const Id = (description: string) => Type.String({ description });
const NullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const NullableTime = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

const EventMetadata = Type.Record(Type.String(), Type.String(), {
  description: "The resource's metadata, as set through the API ({} when none).",
});

const conversionFields = {
  conversionId: Id('Identifier of the conversion (conv_…).'),
  partnerId: Id('Identifier of the partner (prt_…).'),
  offerId: Id('Identifier of the offer (off_…).'),
  revenueCents: Type.Integer({ description: 'Revenue in minor currency units.' }),
  payoutCents: Type.Integer({ description: 'Partner payout in minor currency units.' }),
  currency: Type.String({ description: 'ISO 4217 currency code.' }),
  metadata: EventMetadata,
};

export const ConversionCreatedData = Type.Object(
  {
    ...conversionFields,
    status: Type.Union([Type.Literal('pending'), Type.Literal('approved')]),
    sub1: NullableString('Sub-tracking value supplied with the conversion; null when none was.'),
    externalTxnId: NullableString("Transaction id in the advertiser's own system; null when none was."),
  },
  { additionalProperties: false },
);

const decisionFields = {
  sub1: NullableString('Sub-tracking value supplied with the conversion.'),
  externalTxnId: NullableString("Transaction id in the advertiser's own system."),
  approvedAt: NullableTime('When the conversion was approved.'),
  rejectedAt: NullableTime('When the conversion was rejected.'),
  rejectionReason: NullableString('Reason given for the rejection.'),
};

export const ConversionApprovedData = Type.Object(
  {
    ...conversionFields,
    status: Type.Literal('approved'),
    ...decisionFields,
    approvedBy: Type.Union([Type.Literal('manual'), Type.Literal('hold_expired')], {
      description: 'manual (API or dashboard) or hold_expired (automatic after the hold time).',
    }),
  },
  { additionalProperties: false },
);

export const ConversionRejectedData = Type.Object(
  { ...conversionFields, status: Type.Literal('rejected'), ...decisionFields, approvedBy: Type.Null() },
  { additionalProperties: false },
);

const partnerFields = {
  partnerId: Id('Identifier of the partner (prt_…).'),
  name: Type.String(),
  email: Type.String(),
  website: NullableString('Website given by the partner.'),
  metadata: EventMetadata,
};

export const PartnerAppliedData = Type.Object(
  { ...partnerFields, status: Type.Literal('applicant') },
  { additionalProperties: false },
);
export const PartnerApprovedData = Type.Object(
  { ...partnerFields, status: Type.Literal('active') },
  { additionalProperties: false },
);
export const PartnerBannedData = Type.Object(
  {
    ...partnerFields,
    status: Type.Literal('banned'),
    reason: NullableString('Why the partner was banned.'),
    bannedBy: Type.Union([Type.Literal('manual'), Type.Literal('automation')]),
  },
  { additionalProperties: false },
);

export const FRAUD_SIGNALS = [
  'high_risk_score',
  'datacenter_ip',
  'blocklist_hit',
  'bot_user_agent',
  'click_velocity',
] as const;
export type FraudSignal = (typeof FRAUD_SIGNALS)[number];

export const FraudHighRiskData = Type.Object(
  {
    clickId: Id('Identifier of the click (clk_…).'),
    offerId: Id('Offer clicked.'),
    partnerId: Id('Partner whose link was clicked.'),
    score: Type.Integer({ minimum: 0, maximum: 100 }),
    threshold: Type.Integer({ minimum: 0, maximum: 100, description: "The brand's threshold the score exceeded." }),
    signals: Type.Array(Type.Union(FRAUD_SIGNALS.map((s) => Type.Literal(s)))),
    ip: Type.String(),
    userAgent: NullableString('User agent of the click.'),
  },
  { additionalProperties: false },
);

export const CapReachedData = Type.Object(
  {
    offerId: Id('Offer whose cap was reached.'),
    cap: Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly'), Type.Literal('global')]),
    limit: Type.Integer(),
    count: Type.Integer(),
    periodStart: NullableTime('Start of the capped period; null for the global cap.'),
    periodEnd: NullableTime('End (exclusive) of the capped period; null for the global cap.'),
  },
  { additionalProperties: false },
);

const payoutFields = {
  payoutId: Id('Identifier of the payout (pay_…).'),
  partnerId: Id('Partner paid (prt_…).'),
  currency: Type.String({ description: 'ISO 4217 currency code; a payout has one currency.' }),
  amountCents: Type.Integer({ description: "Sum of its conversions' payoutCents, in minor units." }),
  conversionCount: Type.Integer({ description: 'Approved conversions the payout covers.' }),
  upTo: Type.String({ format: 'date-time', description: 'Conversions approved up to this instant were included.' }),
};

export const PayoutCreatedData = Type.Object(
  { ...payoutFields, status: Type.Literal('created') },
  { additionalProperties: false },
);
export const PayoutPaidData = Type.Object(
  {
    ...payoutFields,
    status: Type.Literal('paid'),
    paidAt: Type.String({ format: 'date-time' }),
    reference: NullableString('Payment reference given when it was marked paid (e.g. a bank transfer id).'),
  },
  { additionalProperties: false },
);
/**
 * A created payout withdrawn before it was paid: a consumer that booked payout.created (an
 * accounting sync) learns the liability is gone; its conversions are payable again and a later
 * run's payout.created pays them.
 */
export const PayoutCancelledData = Type.Object(
  {
    ...payoutFields,
    status: Type.Literal('cancelled'),
    cancelledAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/**
 * Operational events about the brand's own webhook endpoints (issue #20): sent to the brand's
 * *other* subscriptions that chose them, never to the subscription they are about.
 */
const subscriptionHealthFields = {
  subscriptionId: Id('The subscription the event is about (sub_…).'),
  url: Type.String({ description: 'Its endpoint URL.' }),
  consecutiveFailures: Type.Integer({ description: 'Deliveries that ended failed since the last successful attempt.' }),
  failingSince: NullableTime('First failed attempt since the last successful one.'),
  lastSuccessAt: NullableTime('Last successful attempt, if any.'),
  lastFailureAt: NullableTime('Last failed attempt, if any.'),
};

export const SubscriptionFailingData = Type.Object(
  {
    ...subscriptionHealthFields,
    status: Type.Literal('active'),
    progressPercent: Type.Union([Type.Literal(50), Type.Literal(75), Type.Literal(90)], {
      description: 'How far the failures have gone towards automatic disabling (WEBHOOK_DISABLE_AFTER).',
    }),
    disableAfterDays: Type.Number({ description: 'Days of failures that disable a subscription.' }),
    disableAfterDeliveries: Type.Integer({ description: 'Failed deliveries (at least) that disable a subscription.' }),
  },
  { additionalProperties: false },
);

export const SubscriptionDisabledData = Type.Object(
  {
    ...subscriptionHealthFields,
    status: Type.Literal('disabled'),
    disabledAt: Type.String({ format: 'date-time' }),
    disabledReason: Type.String({ description: 'Why it was disabled.' }),
    disabledBy: Type.Union([Type.Literal('automatic'), Type.Literal('manual')], {
      description: 'automatic (its deliveries kept failing) or manual (API or dashboard).',
    }),
  },
  { additionalProperties: false },
);

export const EVENT_SCHEMAS = {
  'conversion.created': ConversionCreatedData,
  'conversion.approved': ConversionApprovedData,
  'conversion.rejected': ConversionRejectedData,
  'partner.applied': PartnerAppliedData,
  'partner.approved': PartnerApprovedData,
  'partner.banned': PartnerBannedData,
  'fraud.high_risk': FraudHighRiskData,
  'cap.reached': CapReachedData,
  'payout.created': PayoutCreatedData,
  'payout.paid': PayoutPaidData,
  'payout.cancelled': PayoutCancelledData,
  'webhook.subscription.failing': SubscriptionFailingData,
  'webhook.subscription.disabled': SubscriptionDisabledData,
} satisfies Record<string, TSchema>;

export type EventName = keyof typeof EVENT_SCHEMAS;
export const EVENT_NAMES = Object.keys(EVENT_SCHEMAS) as EventName[];
export type EventData<E extends EventName> = Static<(typeof EVENT_SCHEMAS)[E]>;

/** Event groups (`conversion`, `partner`, …): the part of a name before its first dot. */
export const EVENT_GROUPS = [...new Set(EVENT_NAMES.map((name) => name.split('.')[0] as string))];

/**
 * Whether a subscription's event list takes `event`: its name, `*` (every event) or
 * `<group>.*` (every event of the group, e.g. `conversion.*`).
 */
export function eventMatches(patterns: readonly string[], event: string): boolean {
  if (patterns.includes(event) || patterns.includes('*')) return true;
  const dot = event.indexOf('.');
  return dot > 0 && patterns.includes(`${event.slice(0, dot)}.*`);
}
