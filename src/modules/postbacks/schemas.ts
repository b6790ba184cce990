import { type Static, Type } from '@sinclair/typebox';
import { IdField, Nullable, Resource, Timestamp } from '../../http/schemas.js';
import { MAX_URL_LENGTH } from '../urls.js';

export const POSTBACK_EVENTS = ['conversion.created', 'conversion.approved', 'conversion.rejected'] as const;
export type PostbackEvent = (typeof POSTBACK_EVENTS)[number];

export const Postback = Resource('PartnerPostback', {
  id: Type.String(),
  partnerId: Type.String(),
  offerId: Nullable(Type.String({ description: 'null: every offer (a per-offer template overrides it).' })),
  url: Type.String(),
  events: Type.Array(Type.String()),
  createdAt: Timestamp,
});
export type Postback = Static<typeof Postback>;

export const CreatePostbackBody = Type.Object(
  {
    url: Type.String({
      format: 'http-url-template',
      maxLength: MAX_URL_LENGTH,
      description:
        'http(s) URL template; macros {click_id} {conversion_id} {offer_id} {partner_id} {payout} {currency} {status} {sub1}…{sub5} {txn_id} are filled in, URL-encoded.',
    }),
    offerId: Type.Optional(
      Nullable(IdField(), {
        description:
          'One offer of the brand, or null (or left out) for every offer. An empty string is 422: it is no offer.',
      }),
    ),
    events: Type.Array(Type.Union(POSTBACK_EVENTS.map((e) => Type.Literal(e))), {
      minItems: 1,
      maxItems: POSTBACK_EVENTS.length,
      uniqueItems: true,
    }),
  },
  { additionalProperties: false },
);
export type CreatePostbackBody = Static<typeof CreatePostbackBody>;
