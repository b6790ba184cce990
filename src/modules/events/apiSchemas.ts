/** The events API's schemas (GET /api/public/events…): what the outbox recorded, as clients read it. */
import { type Static, Type } from '@sinclair/typebox';
import { pageQuery, Timestamp } from '../../http/schemas.js';
import { DeliveryWithAttempts } from '../deliveries/schemas.js';
import { EVENT_NAMES } from './schemas.js';

export const EventName = Type.Union(
  EVENT_NAMES.map((name) => Type.Literal(name)),
  { description: 'An event name from GET /api/public/webhook-events.' },
);

export const ApiEvent = Type.Object(
  {
    id: Type.String({ description: 'evt_…, the envelope id every delivery of the event carries.' }),
    event: Type.String(),
    createdAt: Timestamp,
    test: Type.Boolean({ description: 'The sample event of a test send.' }),
    data: Type.Object({}, { additionalProperties: true, description: "The envelope's data, as sent." }),
  },
  { $id: 'Event', additionalProperties: false },
);
export type ApiEvent = Static<typeof ApiEvent>;

export const EventWithDeliveries = Type.Object(
  {
    ...ApiEvent.properties,
    deliveries: Type.Array(DeliveryWithAttempts, {
      description: 'Every delivery of the event (webhooks and postback sends), oldest first, with their attempts.',
    }),
  },
  { $id: 'EventWithDeliveries', additionalProperties: false },
);

export const ListEventsQuery = Type.Object(
  {
    event: Type.Optional(EventName),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Events created at or after this time.' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Events created before this time.' })),
    ...pageQuery('evt'),
  },
  { additionalProperties: false },
);

export const ResendEventBody = Type.Object(
  { subscriptionId: Type.String({ maxLength: 64, description: 'A webhook subscription (sub_…) of the brand.' }) },
  { additionalProperties: false },
);
