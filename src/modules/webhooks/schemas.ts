import { type Static, Type } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, PageQuery, Timestamp } from '../../http/schemas.js';
import { EVENT_NAMES } from '../events/schemas.js';
import { MAX_URL_LENGTH } from '../urls.js';

const MAX_SECRET_LENGTH = 256;
const MIN_SECRET_LENGTH = 8;

const EventName = Type.Union(
  EVENT_NAMES.map((name) => Type.Literal(name)),
  { description: 'An event name from GET /api/public/webhook-events.' },
);
const Events = Type.Array(EventName, { minItems: 1, maxItems: EVENT_NAMES.length, uniqueItems: true });
const Url = Type.String({
  format: 'http-url',
  maxLength: MAX_URL_LENGTH,
  description: 'Absolute http(s) URL receiving deliveries.',
});
const Secret = Type.String({
  minLength: MIN_SECRET_LENGTH,
  maxLength: MAX_SECRET_LENGTH,
  description: 'Signing secret; every delivery is then signed (X-Service-Signature). Never returned.',
});
export const SubscriptionStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled')]);

export const Subscription = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  hasSecret: Type.Boolean(),
  status: SubscriptionStatus,
  createdAt: Timestamp,
});
export type Subscription = Static<typeof Subscription>;

export const CreateSubscriptionBody = Type.Object(
  { url: Url, events: Events, secret: Type.Optional(Secret) },
  { additionalProperties: false },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Nullable(Secret)),
    status: Type.Optional(SubscriptionStatus),
  },
  { additionalProperties: false },
);
export type UpdateSubscriptionBody = Static<typeof UpdateSubscriptionBody>;

export const DeliveryStatus = Type.Union([
  Type.Literal('attempting'),
  Type.Literal('retry_scheduled'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
]);
export const DeliveryKind = Type.Union([Type.Literal('webhook'), Type.Literal('postback')]);

export const Attempt = Type.Object({
  number: Type.Integer(),
  attemptedAt: Timestamp,
  statusCode: Nullable(Type.Integer()),
  latencyMs: Type.Integer(),
  responseBody: Nullable(Type.String({ description: 'First 16 KiB of the response body.' })),
  error: Nullable(Type.String()),
});

export const Delivery = Type.Object({
  id: Type.String({ description: 'wh_…, sent as X-Service-Webhook-Id.' }),
  kind: DeliveryKind,
  subscriptionId: Type.String(),
  eventId: Type.String(),
  event: Type.String(),
  status: DeliveryStatus,
  attemptCount: Type.Integer(),
  nextAttemptAt: NullableTimestamp,
  createdAt: Timestamp,
});
export type Delivery = Static<typeof Delivery>;

export const DeliveryWithAttempts = Type.Object({ ...Delivery.properties, attempts: Type.Array(Attempt) });

export const ListDeliveriesQuery = Type.Object(
  { status: Type.Optional(DeliveryStatus), kind: Type.Optional(DeliveryKind), ...PageQuery },
  { additionalProperties: false },
);
