import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { errorResponses, KEYED_ERRORS } from '../../http/schemas.js';
import { brandToApi, findBrandById } from './repository.js';
import { Brand, UpdateBrandBody } from './schemas.js';
import { updateBrand } from './service.js';

export function brandRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/brand',
      {
        schema: {
          operationId: 'getBrand',
          tags: ['brand'],
          summary: "The calling key's brand and its settings.",
          security: [{ bearerAuth: [] }],
          response: { 200: Brand, ...errorResponses(...KEYED_ERRORS) },
        },
      },
      async (request) => {
        const row = await findBrandById(ctx.db.read, request.auth.brandId);
        if (!row) throw ApiError.notFound('Brand');
        return brandToApi(row);
      },
    );

    app.patch(
      '/brand',
      {
        schema: {
          operationId: 'updateBrand',
          tags: ['brand'],
          summary: 'Change brand settings: name, timezone, currency, fraud threshold, auto-ban rule.',
          security: [{ bearerAuth: [] }],
          body: UpdateBrandBody,
          response: { 200: Brand, ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => brandToApi(await updateBrand(ctx.db, ctx.clock, request.auth.brandId, request.body)),
    );
  };
}
