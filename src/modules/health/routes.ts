import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { errorResponses, Resource } from '../../http/schemas.js';

export function healthRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/health',
      {
        schema: {
          operationId: 'getHealth',
          tags: ['health'],
          summary: 'Liveness: the process is up.',
          response: { 200: Resource('Health', { status: Type.Literal('ok') }) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/ready',
      {
        schema: {
          operationId: 'getReadiness',
          tags: ['health'],
          summary: 'Readiness: the database answers.',
          response: {
            200: Resource('Readiness', { status: Type.Literal('ready'), database: Type.String() }),
            503: errorResponses(503)[503],
          },
        },
      },
      async () => {
        try {
          await ctx.db.ping();
        } catch {
          throw new ApiError('service_unavailable', 'The database is not reachable.', undefined, {
            'Retry-After': '1',
          });
        }
        return { status: 'ready' as const, database: ctx.db.dialect };
      },
    );
  };
}
