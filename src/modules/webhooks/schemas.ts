import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Resource, Timestamp } from '../../http/schemas.js';
import { EVENT_NAMES } from '../events/schemas.js';
import { Metadata, MetadataInput, MetadataPatch } from '../metadata.js';
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

export const Subscription = Resource('WebhookSubscription', {
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  hasSecret: Type.Boolean(),
  status: SubscriptionStatus,
  metadata: Metadata,
  createdAt: Timestamp,
});
export type Subscription = Static<typeof Subscription>;

export const CreateSubscriptionBody = Type.Object(
  { url: Url, events: Events, secret: Type.Optional(Secret), metadata: Type.Optional(MetadataInput) },
  { additionalProperties: false },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Nullable(Secret)),
    status: Type.Optional(SubscriptionStatus),
    metadata: Type.Optional(MetadataPatch),
  },
  { additionalProperties: false },
);
export type UpdateSubscriptionBody = Static<typeof UpdateSubscriptionBody>;

// The delivery log's schemas belong to the delivery engine; re-exported for existing users.
export {
  Attempt,
  Delivery,
  DeliveryKind,
  DeliveryStatus,
  DeliveryWithAttempts,
  ListDeliveriesQuery,
} from '../deliveries/schemas.js';
