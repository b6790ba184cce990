import { type Static, Type } from '@sinclair/typebox';
import { IdField, IdFilter, Nullable, NullableTimestamp, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { MAX_AMOUNT_CENTS as MAX_CENTS } from '../../money.js';

export const PayoutStatus = Type.Union([Type.Literal('created'), Type.Literal('paid'), Type.Literal('cancelled')]);

export const Payout = Resource('Payout', {
  id: Type.String({ description: 'pay_…' }),
  partnerId: Type.String(),
  currency: Type.String({ description: 'ISO 4217; a payout never mixes currencies.' }),
  status: PayoutStatus,
  amountCents: Type.Integer({ description: "Sum of its conversions' payoutCents (minor units)." }),
  conversionCount: Type.Integer(),
  upTo: Timestamp,
  reference: Nullable(Type.String()),
  createdAt: Timestamp,
  paidAt: NullableTimestamp,
  cancelledAt: NullableTimestamp,
});
export type Payout = Static<typeof Payout>;

export const PayoutConversion = Resource('PayoutConversion', {
  conversionId: Type.String(),
  offerId: Type.String(),
  amountCents: Type.Integer({ description: 'The conversion’s payoutCents when the payout was created.' }),
  approvedAt: NullableTimestamp,
  createdAt: Timestamp,
  externalTxnId: Nullable(Type.String()),
});

export const PayoutDetail = Type.Composite(
  [
    Payout,
    Type.Object({
      partnerName: Type.String(),
      payoutMethod: Nullable(
        Type.String({
          description:
            'The payout method to pay to, e.g. PayPal: what the partner had entered in the portal when the payout was created (a payout run), kept as it was whatever the partner enters afterwards, and when it is marked paid. To pay to details the partner changed since, cancel the payout and run again. Null when the partner had entered none.',
        }),
      ),
      payoutAccount: Nullable(
        Type.String({
          description:
            'The account to pay to, e.g. a PayPal e-mail or an IBAN, as the partner had entered it when the payout was created (see payoutMethod).',
        }),
      ),
      conversions: Type.Array(PayoutConversion, {
        description: 'Empty once cancelled: a cancelled payout gave its conversions back.',
      }),
    }),
  ],
  { $id: 'PayoutDetail', additionalProperties: false },
);
export type PayoutDetail = Static<typeof PayoutDetail>;

const UpTo = Type.String({
  format: 'date-time',
  maxLength: 40,
  description:
    'ISO 8601 instant with a zone; conversions approved at or before it are paid. Not in the future (so the set a run covers never grows), and the key that makes a repeat idempotent.',
});

export const CreatePayoutsBody = Type.Object(
  {
    upTo: UpTo,
    partnerId: Type.Optional(
      IdField('Pay only this partner (leave it out for every partner; an empty or unknown id is 422).'),
    ),
    minimumCents: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_CENTS,
        description: 'Skip a partner whose payable amount in a currency is below this (default 0).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreatePayoutsBody = Static<typeof CreatePayoutsBody>;

export const PreviewQuery = Type.Object(
  {
    upTo: UpTo,
    partnerId: IdFilter('partner'),
    minimumCents: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CENTS })),
  },
  { additionalProperties: false },
);

export const RunResult = Resource('PayoutRun', {
  upTo: Timestamp,
  partnerId: Nullable(Type.String()),
  minimumCents: Type.Integer(),
  data: Type.Array(Payout, { description: 'One payout per partner and currency.' }),
});
export type RunResult = Static<typeof RunResult>;

export const PreviewLine = Resource('PayoutPreviewLine', {
  partnerId: Type.String(),
  partnerName: Type.String(),
  currency: Type.String(),
  amountCents: Type.Integer(),
  conversionCount: Type.Integer(),
});
export type PreviewLine = Static<typeof PreviewLine>;

export const Preview = Resource('PayoutPreview', {
  upTo: Timestamp,
  alreadyCreated: Type.Boolean({
    description:
      'A run with this upTo (and partner) and minimumCents exists: creating it again returns that run, and data lists ' +
      'what it pays (its payouts that are not cancelled). Conversions of a cancelled payout are paid by ' +
      'a run with another upTo.',
  }),
  data: Type.Array(PreviewLine, {
    description: 'What creating the run would pay: what is payable now, or what the existing run pays.',
  }),
  belowMinimum: Type.Array(PreviewLine, {
    description: 'Payable, but under minimumCents: left for a later run (empty when the run exists).',
  }),
});
export type Preview = Static<typeof Preview>;

export const ListPayoutsQuery = Type.Object(
  {
    status: Type.Optional(PayoutStatus),
    partnerId: IdFilter('partner'),
    currency: Type.Optional(
      Type.String({
        format: 'currency-filter',
        maxLength: 3,
        description:
          'ISO 4217 code, any case (`eur` finds EUR); a withdrawn one (`HRK`, `SLL`, `ZWL`) finds payouts made in it before.',
      }),
    ),
    ...pageQuery('pay'),
  },
  { additionalProperties: false },
);
export type ListPayoutsQuery = Static<typeof ListPayoutsQuery>;

export const MarkPaidBody = Type.Object(
  { reference: Type.Optional(Nullable(Type.String({ maxLength: 200, description: 'e.g. a bank transfer id.' }))) },
  { additionalProperties: false },
);

export const Balance = Resource('Balance', {
  currency: Type.String(),
  pendingCents: Type.Integer({ description: 'Conversions still pending.' }),
  payableCents: Type.Integer({ description: 'Approved, in no payout yet.' }),
  inPayoutCents: Type.Integer({ description: 'In a created payout, not yet paid.' }),
  paidCents: Type.Integer({ description: 'In payouts marked paid.' }),
});
export type Balance = Static<typeof Balance>;

export const Balances = Resource('PartnerBalances', {
  partnerId: Type.String(),
  data: Type.Array(Balance, { description: 'One entry per currency; amounts are never summed across currencies.' }),
});
