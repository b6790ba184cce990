/**
 * The OpenAPI document's `webhooks` section: one operation per event, the request Affitrack
 * sends to a subscribed URL (spec §2 envelope, §5 signature headers, §6 delivery rules).
 * Generated from the event schemas and the catalogue's examples, like
 * GET /api/public/webhook-events, so the two cannot drift apart.
 */
import type { OpenApiParameters, OpenApiSchemas, OpenApiWebhooks } from '../../http/openapi.js';
import { EVENT_NAMES, EVENT_SCHEMAS, type EventName } from '../events/schemas.js';
import { eventCatalogue } from './catalogue.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** `conversion.created` → `ConversionCreated`. */
function pascalName(event: EventName): string {
  return event
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The envelope of every delivery (spec §2), with `event` and `data` narrowed to one event. */
function envelope(event: EventName, data: string): OpenApiSchemas[string] {
  return {
    type: 'object',
    additionalProperties: false,
    description: `The body of a ${event} delivery.`,
    required: ['id', 'event', 'createdAt', 'brandId', 'data'],
    properties: {
      id: { type: 'string', description: 'evt_…: the same on every retry; de-duplicate on it.' },
      event: { type: 'string', const: event },
      createdAt: { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with milliseconds.' },
      brandId: { type: 'string', description: 'The brand the event belongs to (brd_…).' },
      data: ref(data),
    },
  };
}

const HEADERS: OpenApiParameters = [
  {
    name: 'X-Service-Signature',
    in: 'header',
    required: false,
    description:
      'Sent when the subscription has a secret: `t=<Unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`. ' +
      'While a secret rotation lasts every delivery is signed with both secrets, `t=…,v1=<new>,v1=<old>` ' +
      '(with a third `v1` while a second rotation within the first keeps the original secret signing until ' +
      'its promised time; 3 at most): accept the request when any `v1` matches. Compare in constant time; ' +
      'refuse a t older than 5 minutes.',
    // One or more v1: a receiver validating requests against this document must not refuse
    // the deliveries of a rotation (two or three v1 for up to 7 days).
    schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
  },
  { name: 'X-Service-Event', in: 'header', required: true, description: 'The event name.', schema: { type: 'string' } },
  {
    name: 'X-Service-Webhook-Id',
    in: 'header',
    required: true,
    description: 'wh_…: the delivery, the same on every attempt.',
    schema: { type: 'string' },
  },
];

export function webhookDocument(): { schemas: OpenApiSchemas; webhooks: OpenApiWebhooks } {
  const examples = new Map(eventCatalogue().data.map((entry) => [entry.name, entry]));
  const schemas: OpenApiSchemas = {};
  const webhooks: OpenApiWebhooks = {};
  for (const event of EVENT_NAMES) {
    const name = pascalName(event);
    const entry = examples.get(event);
    // A plain JSON copy: TypeBox schemas carry symbol keys that are not part of JSON Schema.
    schemas[`${name}Data`] = JSON.parse(JSON.stringify(EVENT_SCHEMAS[event]));
    schemas[`${name}Event`] = envelope(event, `${name}Data`);
    webhooks[event] = {
      post: {
        operationId: `${name.charAt(0).toLowerCase()}${name.slice(1)}Webhook`,
        tags: ['webhooks'],
        summary: entry?.description ?? event,
        description:
          'Sent as a POST to every active subscription to this event. A 2xx answer is success; any other ' +
          'status, a time-out (10 s) or a network error is retried after 1 s, 5 s, 30 s, 5 min and 30 min ' +
          '(6 attempts), then the delivery is marked failed.',
        security: [],
        parameters: HEADERS,
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: ref(`${name}Event`), ...(entry ? { example: entry.example } : {}) },
          },
        },
        responses: {
          '2XX': { description: 'Received: no further attempts.' },
          '4XX': { description: 'Refused: retried on the schedule above.' },
          '5XX': { description: 'Failed: retried on the schedule above.' },
        },
      },
    };
  }
  return { schemas, webhooks };
}
