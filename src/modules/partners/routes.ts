import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { findPartner, listPartners, partnerToApi } from './repository.js';
import { BanBody, CreatePartnerBody, ListPartnersQuery, Partner, UpdatePartnerBody } from './schemas.js';
import { approvePartner, banPartner, createPartner, updatePartner } from './service.js';

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];

export function partnerRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/partners',
      {
        schema: {
          operationId: 'listPartners',
          tags: ['partners'],
          summary: "List the brand's partners, newest first.",
          security,
          querystring: ListPartnersQuery,
          response: { 200: ListOf(Partner), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        return toPage(
          await listPartners(ctx.db.read, request.auth.brandId, { ...request.query, limit }),
          limit,
          partnerToApi,
        );
      },
    );

    app.post(
      '/partners',
      {
        schema: {
          operationId: 'createPartner',
          tags: ['partners'],
          summary: 'Add a partner directly (starts active; fires partner.approved).',
          security,
          body: CreatePartnerBody,
          response: { 201: Partner, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(partnerToApi(await createPartner(ctx, request.auth.brandId, request.body))),
    );

    app.get(
      '/partners/:id',
      {
        schema: {
          operationId: 'getPartner',
          tags: ['partners'],
          summary: 'One partner.',
          security,
          params: IdParams,
          response: { 200: Partner, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const row = await findPartner(ctx.db.read, request.auth.brandId, request.params.id);
        if (!row) throw ApiError.notFound('Partner');
        return partnerToApi(row);
      },
    );

    app.patch(
      '/partners/:id',
      {
        schema: {
          operationId: 'updatePartner',
          tags: ['partners'],
          summary: 'Change a partner\'s metadata (merged key by key; "" removes a key, null removes all).',
          security,
          params: IdParams,
          body: UpdatePartnerBody,
          response: { 200: Partner, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request) => partnerToApi(await updatePartner(ctx, request.auth.brandId, request.params.id, request.body)),
    );

    app.post(
      '/partners/:id/approve',
      {
        schema: {
          operationId: 'approvePartner',
          tags: ['partners'],
          summary: 'Approve an applicant (applicant → active; fires partner.approved).',
          security,
          params: IdParams,
          response: { 200: Partner, ...errorResponses(...KEYED_ERRORS, 404, 409) },
        },
      },
      async (request) => partnerToApi(await approvePartner(ctx, request.auth.brandId, request.params.id)),
    );

    app.post(
      '/partners/:id/ban',
      {
        schema: {
          operationId: 'banPartner',
          tags: ['partners'],
          summary: 'Ban a partner from any non-banned state (fires partner.banned).',
          security,
          params: IdParams,
          body: Type.Optional(BanBody),
          response: { 200: Partner, ...errorResponses(...KEYED_ERRORS, 404, 409, 422) },
        },
      },
      async (request) =>
        partnerToApi(await banPartner(ctx, request.auth.brandId, request.params.id, request.body?.reason ?? null)),
    );
  };
}
