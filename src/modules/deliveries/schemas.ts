/** The delivery log's API schemas (GET /api/public/webhook-deliveries…). */
import { type Static, Type } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, PageQuery, Resource, Timestamp } from '../../http/schemas.js';

export const DeliveryStatus = Type.Union([
  Type.Literal('attempting'),
  Type.Literal('retry_scheduled'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('parked'),
]);
/** The registered target kinds: a brand's webhook subscription, a partner's postback template. */
export const DeliveryKind = Type.Union([Type.Literal('webhook'), Type.Literal('postback')]);

export const Attempt = Resource('DeliveryAttempt', {
  number: Type.Integer(),
  attemptedAt: Timestamp,
  statusCode: Nullable(Type.Integer()),
  latencyMs: Type.Integer(),
  responseBody: Nullable(Type.String({ description: 'First 16 KiB of the response body.' })),
  error: Nullable(Type.String()),
});

export const Delivery = Resource('Delivery', {
  id: Type.String({ description: 'wh_…, sent as X-Service-Webhook-Id.' }),
  kind: DeliveryKind,
  subscriptionId: Type.String({
    description: 'The target: a webhook subscription (sub_…) or, for kind postback, a postback template (pbk_…).',
  }),
  eventId: Type.String(),
  event: Type.String(),
  status: DeliveryStatus,
  attemptCount: Type.Integer(),
  nextAttemptAt: NullableTimestamp,
  createdAt: Timestamp,
});
export type Delivery = Static<typeof Delivery>;

export const DeliveryWithAttempts = Resource('DeliveryWithAttempts', {
  ...Delivery.properties,
  attempts: Type.Array(Attempt),
});

export const ListDeliveriesQuery = Type.Object(
  { status: Type.Optional(DeliveryStatus), kind: Type.Optional(DeliveryKind), ...PageQuery },
  { additionalProperties: false },
);
