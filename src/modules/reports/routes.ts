import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { errorResponses, KEYED_ERRORS } from '../../http/schemas.js';
import { Report, ReportQuery } from './schemas.js';
import { buildReport } from './service.js';

export function reportRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/reports',
      {
        schema: {
          tags: ['reports'],
          summary: 'Aggregated metrics over a brand-local date range, optionally filtered and grouped.',
          security: [{ bearerAuth: [] }],
          querystring: ReportQuery,
          response: { 200: Report, ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => buildReport(ctx, request.auth.brandId, request.query),
    );
  };
}
