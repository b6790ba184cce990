/**
 * The delivery log (DESIGN §4): every delivery of the brand, webhooks and postback sends
 * alike (spec §6 rule 4), each with its attempts, and redelivery. Mounted under
 * /api/public behind the API key hook, beside the subscription routes.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { deliveryToApi, findDeliveryDetail, listDeliveries } from './repository.js';
import { Delivery, DeliveryWithAttempts, ListDeliveriesQuery } from './schemas.js';
import { redeliver } from './service.js';

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];
const tags = ['webhooks'];

export function deliveryLogRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/webhook-deliveries',
      {
        schema: {
          operationId: 'listDeliveries',
          tags,
          summary: 'The whole delivery log of the brand (webhooks and postback sends), newest first.',
          security,
          querystring: ListDeliveriesQuery,
          response: { 200: ListOf(Delivery), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await listDeliveries(ctx.db.read, request.auth.brandId, { ...request.query, limit });
        return toPage(rows, limit, deliveryToApi);
      },
    );

    app.get(
      '/webhook-deliveries/:id',
      {
        schema: {
          operationId: 'getDelivery',
          tags,
          summary: 'One delivery with every attempt.',
          security,
          params: IdParams,
          response: { 200: DeliveryWithAttempts, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const delivery = await findDeliveryDetail(ctx.db.read, request.auth.brandId, request.params.id);
        if (!delivery) throw ApiError.notFound('Delivery');
        return delivery;
      },
    );

    app.post(
      '/webhook-deliveries/:id/redeliver',
      {
        schema: {
          operationId: 'redeliverDelivery',
          tags,
          summary:
            'Make exactly one attempt now (same wh_ id, evt_ id and body) for a succeeded, failed or ' +
            'retry-scheduled delivery; if it fails, the scheduled retries go on as before.',
          security,
          params: IdParams,
          response: { 200: Delivery, ...errorResponses(...KEYED_ERRORS, 404, 409) },
        },
      },
      async (request) => deliveryToApi(await redeliver(ctx, request.auth.brandId, request.params.id)),
    );
  };
}
