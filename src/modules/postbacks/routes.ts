import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { errorResponses, KEYED_ERRORS, Resource } from '../../http/schemas.js';
import { CreatePostbackBody, Postback } from './schemas.js';
import { createPostback, deletePostback, listPostbacks, MAX_POSTBACKS_PER_PARTNER, postbackToApi } from './service.js';

const security = [{ bearerAuth: [] }];
const tags = ['postbacks'];
const PartnerParams = Type.Object({ id: Type.String() });

export function postbackRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/partners/:id/postbacks',
      {
        schema: {
          operationId: 'listPartnerPostbacks',
          tags,
          summary: "The partner's postback URL templates.",
          security,
          params: PartnerParams,
          response: {
            200: Resource('PartnerPostbacks', { data: Type.Array(Postback) }),
            ...errorResponses(...KEYED_ERRORS, 404),
          },
        },
      },
      async (request) => ({
        data: (await listPostbacks(ctx, request.auth.brandId, request.params.id)).map(postbackToApi),
      }),
    );

    app.post(
      '/partners/:id/postbacks',
      {
        schema: {
          operationId: 'createPartnerPostback',
          tags,
          summary: 'Add a postback URL template (global, or for one offer) for conversion events.',
          description: `A partner has at most ${MAX_POSTBACKS_PER_PARTNER} postbacks; one more is 422 with the detail path \`postbacks\` (delete one first).`,
          security,
          params: PartnerParams,
          body: CreatePostbackBody,
          response: { 201: Postback, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(postbackToApi(await createPostback(ctx, request.auth.brandId, request.params.id, request.body))),
    );

    app.delete(
      '/partners/:id/postbacks/:postbackId',
      {
        schema: {
          operationId: 'deletePartnerPostback',
          tags,
          summary: 'Remove a postback template.',
          security,
          params: Type.Object({ id: Type.String(), postbackId: Type.String() }),
          response: { 204: Type.Null(), ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request, reply) => {
        await deletePostback(ctx, request.auth.brandId, request.params.id, request.params.postbackId);
        return reply.code(204).send(null);
      },
    );
  };
}
