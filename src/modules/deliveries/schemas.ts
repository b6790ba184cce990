/** The delivery log's API schemas (GET /api/public/webhook-deliveries…). */
import { type Static, Type } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, pageQuery, Resource, Timestamp } from '../../http/schemas.js';

export const DeliveryStatus = Type.Union([
  Type.Literal('attempting'),
  Type.Literal('retry_scheduled'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('parked'),
]);
/** The registered target kinds: a brand's webhook subscription, a partner's postback template. */
export const DeliveryKind = Type.Union([Type.Literal('webhook'), Type.Literal('postback')]);

const Headers = Type.Record(Type.String(), Type.String(), { description: 'Header names in lower case.' });

export const Attempt = Resource('DeliveryAttempt', {
  number: Type.Integer(),
  attemptedAt: Timestamp,
  statusCode: Nullable(Type.Integer()),
  latencyMs: Type.Integer(),
  responseBody: Nullable(Type.String({ description: 'First 16 KiB of the response body.' })),
  error: Nullable(Type.String()),
  requestUrl: Nullable(Type.String({ description: 'The URL this attempt was sent to.' })),
  requestMethod: Nullable(Type.String()),
  requestHeaders: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description:
        'Headers sent, X-Service-Signature included (the secret is never stored); names in lower case here, spelt as the spec does on the wire.',
    }),
  ),
  responseHeaders: Nullable(Headers),
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
  test: Type.Boolean({ description: 'A test send (POST /api/public/webhooks/:id/test): one attempt, never retried.' }),
  createdAt: Timestamp,
});
export type Delivery = Static<typeof Delivery>;

export type Attempt = Static<typeof Attempt>;

export const DeliveryWithAttempts = Resource('DeliveryWithAttempts', {
  ...Delivery.properties,
  requestBody: Nullable(
    Type.String({ description: 'The exact body every attempt sent (the event envelope); null for GET postbacks.' }),
  ),
  attempts: Type.Array(Attempt),
});
export type DeliveryWithAttempts = Static<typeof DeliveryWithAttempts>;

export const ListDeliveriesQuery = Type.Object(
  { status: Type.Optional(DeliveryStatus), kind: Type.Optional(DeliveryKind), ...pageQuery('wh') },
  { additionalProperties: false },
);
