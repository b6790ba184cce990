import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { findOffer, listOffersCached, offerToApi } from './repository.js';
import { CreateOfferBody, ListOffersQuery, Offer, UpdateOfferBody } from './schemas.js';
import { createOffer, updateOffer } from './service.js';

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];

export function offerRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/offers',
      {
        schema: {
          operationId: 'listOffers',
          tags: ['offers'],
          summary: "List the brand's offers, newest first.",
          security,
          querystring: ListOffersQuery,
          response: { 200: ListOf(Offer), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await listOffersCached(ctx, request.auth.brandId, { ...request.query, limit });
        return toPage(rows, limit, offerToApi);
      },
    );

    app.post(
      '/offers',
      {
        schema: {
          operationId: 'createOffer',
          tags: ['offers'],
          summary: 'Create an offer.',
          security,
          body: CreateOfferBody,
          response: { 201: Offer, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request, reply) => {
        const row = await createOffer(ctx, request.auth.brandId, request.body);
        return reply.code(201).send(offerToApi(row));
      },
    );

    app.get(
      '/offers/:id',
      {
        schema: {
          operationId: 'getOffer',
          tags: ['offers'],
          summary: 'One offer.',
          security,
          params: IdParams,
          response: { 200: Offer, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const row = await findOffer(ctx.db.read, request.auth.brandId, request.params.id);
        if (!row) throw ApiError.notFound('Offer');
        return offerToApi(row);
      },
    );

    app.patch(
      '/offers/:id',
      {
        schema: {
          operationId: 'updateOffer',
          tags: ['offers'],
          summary:
            'Change an offer (fields given are set; caps merge key by key, null clears; a new currency needs the amounts too).',
          security,
          params: IdParams,
          body: UpdateOfferBody,
          response: { 200: Offer, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request) =>
        offerToApi(await updateOffer(ctx, request.auth.brandId, request.params.id, request.body ?? {})),
    );
  };
}
