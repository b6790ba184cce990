/**
 * The events API (issue #20): what the outbox recorded for the brand, each event with every
 * delivery it made and what each attempt sent and got back, and resending an event to a
 * subscription. Mounted under /api/public behind the API key hook, beside the webhook routes.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { deliveryToApi, listDeliveriesOfEvent } from '../deliveries/repository.js';
import { Delivery } from '../deliveries/schemas.js';
import { ApiEvent, EventWithDeliveries, ListEventsQuery, ResendEventBody } from './apiSchemas.js';
import { eventToApi, findEvent, listEvents } from './repository.js';
import { resendEvent } from './service.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const security = [{ bearerAuth: [] }];
const tags = ['events'];

/** `since`/`until` as epoch ms; an empty window is a 422 rather than an empty page. */
function timeWindow(query: { since?: string; until?: string }): { since?: number; until?: number } {
  const since = query.since === undefined ? undefined : Date.parse(query.since);
  const until = query.until === undefined ? undefined : Date.parse(query.until);
  if (since !== undefined && until !== undefined && since >= until) {
    throw InvalidError.at('query.until', 'must be later than since');
  }
  return { since, until };
}

export function eventRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/events',
      {
        schema: {
          operationId: 'listEvents',
          tags,
          summary: 'The brand’s events, newest first, by name and time range.',
          security,
          querystring: ListEventsQuery,
          response: { 200: ListOf(ApiEvent), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await listEvents(ctx.db.read, request.auth.brandId, {
          event: request.query.event,
          cursor: request.query.cursor,
          ...timeWindow(request.query),
          limit,
        });
        return toPage(rows, limit, eventToApi);
      },
    );

    app.get(
      '/events/:id',
      {
        schema: {
          operationId: 'getEvent',
          tags,
          summary: 'One event with every delivery it made: what each attempt sent and what came back.',
          security,
          params: IdParams,
          response: { 200: EventWithDeliveries, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const row = await findEvent(ctx.db.read, request.auth.brandId, request.params.id);
        if (!row) throw ApiError.notFound('Event');
        const deliveries = await listDeliveriesOfEvent(ctx.db.read, request.auth.brandId, row.id, row.payload);
        return { ...eventToApi(row), deliveries };
      },
    );

    app.post(
      '/events/:id/resend',
      {
        schema: {
          operationId: 'resendEvent',
          tags,
          summary:
            'Send the event again to one subscription (a new wh_ delivery with the same evt_ id and body), ' +
            'whether or not it chose the event.',
          security,
          params: IdParams,
          body: ResendEventBody,
          response: { 201: Delivery, ...errorResponses(...KEYED_ERRORS, 400, 404, 409, 422) },
        },
      },
      async (request, reply) => {
        const row = await resendEvent(ctx, request.auth.brandId, request.params.id, request.body.subscriptionId);
        return reply.code(201).send(deliveryToApi(row));
      },
    );
  };
}
