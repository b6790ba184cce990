import { type Static, Type } from '@sinclair/typebox';
import { IdField, IdFilter, Nullable, NullableTimestamp, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { MAX_AMOUNT_CENTS as MAX_CENTS } from '../../money.js';
import { FormatQuery } from '../analytics/csv.js';
import { VisitorFields } from '../analytics/schemas.js';
import { Metadata, MetadataInput } from '../metadata.js';

const Sub = Type.String({ maxLength: 255 });

export const ConversionStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('approved'),
  Type.Literal('rejected'),
]);

export const Conversion = Resource('Conversion', {
  id: Type.String(),
  offerId: Type.String(),
  partnerId: Type.String(),
  clickId: Nullable(Type.String()),
  status: ConversionStatus,
  revenueCents: Type.Integer(),
  payoutCents: Type.Integer(),
  currency: Type.String(),
  sub1: Nullable(Type.String()),
  sub2: Nullable(Type.String()),
  sub3: Nullable(Type.String()),
  sub4: Nullable(Type.String()),
  sub5: Nullable(Type.String()),
  externalTxnId: Nullable(Type.String()),
  capExceeded: Type.Boolean(),
  holdUntil: NullableTimestamp,
  approvedAt: NullableTimestamp,
  rejectedAt: NullableTimestamp,
  rejectionReason: Nullable(Type.String()),
  metadata: Metadata,
  ...VisitorFields,
  createdAt: Timestamp,
});
export type Conversion = Static<typeof Conversion>;

export const CreateConversionBody = Type.Object(
  {
    clickId: Type.Optional(IdField('Attribute to a click (offer, partner, subs come from it).')),
    offerId: Type.Optional(IdField('With partnerId, when there is no click.')),
    partnerId: Type.Optional(IdField('With offerId, when there is no click.')),
    revenueCents: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_CENTS, description: "Defaults to the offer's." }),
    ),
    payoutCents: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_CENTS, description: "Defaults to the offer's." }),
    ),
    currency: Type.Optional(
      Type.String({ format: 'currency', maxLength: 3, description: "ISO 4217, any case; defaults to the offer's." }),
    ),
    sub1: Type.Optional(Sub),
    sub2: Type.Optional(Sub),
    sub3: Type.Optional(Sub),
    sub4: Type.Optional(Sub),
    sub5: Type.Optional(Sub),
    externalTxnId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Your transaction id. A repeat for the same offer returns the existing conversion (200).',
      }),
    ),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);
export type CreateConversionBody = Static<typeof CreateConversionBody>;

const Instant = Type.String({
  maxLength: 40,
  description:
    'A day (YYYY-MM-DD) of the brand time zone, inclusive, counted like GET /reports; or an ISO 8601 timestamp with a zone (Z or an offset) for an exact instant, e.g. UTC.',
});

export const ListConversionsQuery = Type.Object(
  {
    status: Type.Optional(ConversionStatus),
    offerId: IdFilter('offer'),
    partnerId: IdFilter('partner'),
    externalTxnId: Type.Optional(Type.String({ maxLength: 255 })),
    from: Type.Optional(Instant),
    to: Type.Optional(Instant),
    ...pageQuery('conv'),
    ...FormatQuery,
  },
  { additionalProperties: false },
);
export type ListConversionsQuery = Static<typeof ListConversionsQuery>;

export const RejectBody = Type.Object(
  { reason: Type.Optional(Nullable(Type.String({ maxLength: 500 }))) },
  { additionalProperties: false },
);
