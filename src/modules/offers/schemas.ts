import { type Static, Type } from '@sinclair/typebox';
import { Label, Nullable, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { MAX_AMOUNT_CENTS as MAX_CENTS } from '../../money.js';
import { Metadata, MetadataInput, MetadataPatch } from '../metadata.js';
import { MAX_URL_LENGTH } from '../urls.js';

const MAX_HOLD_SECONDS = 365 * 24 * 3600;
const MAX_CAP = 1_000_000_000;

export const OfferStatus = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('archived')]);
export const StartStatus = Type.Union([Type.Literal('pending'), Type.Literal('approved')], {
  description: 'Status new conversions start in.',
});

const Cap = Nullable(Type.Integer({ minimum: 1, maximum: MAX_CAP, description: 'Conversion count; null = no cap.' }));
export const Caps = Type.Object(
  { daily: Cap, weekly: Cap, monthly: Cap, global: Cap },
  { additionalProperties: false, description: 'Weeks start Monday; periods count in the brand time zone.' },
);
const CapsPatch = Type.Partial(Caps, { additionalProperties: false });

/** Checked with the rest of the body, so a macro in the host is listed with the other problems. */
const Url = (description: string) =>
  Type.String({ format: 'http-url-template', maxLength: MAX_URL_LENGTH, description });
const DestinationUrl = Url(
  'Absolute http(s) URL; macros {click_id} {partner_id} {offer_id} {sub1}…{sub5} are filled in on redirect.',
);
const Cents = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_CENTS, description });
const CURRENCY = "A current ISO 4217 code, any case; stored upper case. Amounts are in its minor unit (ISO 4217's).";
const Currency = Type.String({ format: 'currency', maxLength: 3, description: CURRENCY });
/** The offer's amounts are in its currency: a new one names them again (offers/service.ts). */
const NewCurrency = Type.String({
  format: 'currency',
  maxLength: 3,
  description: `${CURRENCY} A currency other than the offer's needs \`revenueCents\` and \`payoutCents\` in the same request (422 naming the missing one; an amount of 0 needs nothing): the offer's amounts are in its own currency and are never relabelled.`,
});
const HoldSeconds = Nullable(
  Type.Integer({
    minimum: 0,
    maximum: MAX_HOLD_SECONDS,
    description: 'Pending conversions are approved this long after they were recorded; null = manual approval only.',
  }),
);

export const Offer = Resource('Offer', {
  id: Type.String(),
  name: Type.String(),
  destinationUrl: Type.String(),
  status: OfferStatus,
  currency: Type.String(),
  revenueCents: Type.Integer(),
  payoutCents: Type.Integer(),
  conversionStatus: StartStatus,
  holdSeconds: Nullable(Type.Integer()),
  caps: Caps,
  fallbackUrl: Nullable(Type.String()),
  metadata: Metadata,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Offer = Static<typeof Offer>;

export const CreateOfferBody = Type.Object(
  {
    name: Label(200),
    destinationUrl: DestinationUrl,
    status: Type.Optional(OfferStatus),
    currency: Type.Optional(Currency),
    revenueCents: Type.Optional(Cents('Default revenue per conversion (default 0).')),
    payoutCents: Type.Optional(Cents('Default partner payout per conversion (default 0).')),
    conversionStatus: Type.Optional(StartStatus),
    holdSeconds: Type.Optional(HoldSeconds),
    caps: Type.Optional(CapsPatch),
    fallbackUrl: Type.Optional(Nullable(Url('Where clicks go while a cap is reached.'))),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);
export type CreateOfferBody = Static<typeof CreateOfferBody>;

export const UpdateOfferBody = Type.Partial(
  Type.Object(
    { ...CreateOfferBody.properties, currency: NewCurrency, metadata: MetadataPatch },
    { additionalProperties: false },
  ),
  { additionalProperties: false },
);
export type UpdateOfferBody = Static<typeof UpdateOfferBody>;

export const ListOffersQuery = Type.Object(
  { status: Type.Optional(OfferStatus), ...pageQuery('off') },
  { additionalProperties: false },
);
export type ListOffersQuery = Static<typeof ListOffersQuery>;
