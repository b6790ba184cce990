import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { escapeHtml } from '../partners/applyPage.js';
import { clickToApi, listClicks } from './repository.js';
import { Click, ListClicksQuery, TrackingQuery } from './schemas.js';
import { trackClick } from './service.js';

const NOT_FOUND_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Link not active</title></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem">
<h1>This link is not active</h1><p>The offer behind this link is paused or no longer available.</p></body></html>`;

function header(value: string | string[] | undefined): string | null {
  const text = Array.isArray(value) ? value[0] : value;
  return text ? text.slice(0, 1024) : null;
}

/** The public tracking link. */
export function trackingRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/t/:offerId/:partnerId',
      {
        schema: {
          tags: ['tracking'],
          summary: "Tracking link: records the click and redirects (302) to the offer's URL with macros filled in.",
          params: Type.Object({ offerId: Type.String({ maxLength: 64 }), partnerId: Type.String({ maxLength: 64 }) }),
          querystring: TrackingQuery,
        },
      },
      async (request, reply) => {
        const q = request.query;
        const outcome = await trackClick(ctx, {
          offerId: request.params.offerId,
          partnerId: request.params.partnerId,
          ip: request.ip,
          userAgent: header(request.headers['user-agent']),
          referer: header(request.headers.referer),
          subs: [q.sub1 ?? null, q.sub2 ?? null, q.sub3 ?? null, q.sub4 ?? null, q.sub5 ?? null],
        });
        reply.header('cache-control', 'no-store');
        if (!outcome.found) return reply.code(404).type('text/html; charset=utf-8').send(NOT_FOUND_PAGE);
        return reply
          .code(302)
          .header('location', outcome.location)
          .type('text/html; charset=utf-8')
          .send(`<a href="${escapeHtml(outcome.location)}">Continue</a>`);
      },
    );
  };
}

export function clickRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/clicks',
      {
        schema: {
          tags: ['clicks'],
          summary: 'List clicks, newest first, with their fraud score and signals.',
          security: [{ bearerAuth: [] }],
          querystring: ListClicksQuery,
          response: { 200: ListOf(Click), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        return toPage(
          await listClicks(ctx.db.read, request.auth.brandId, { ...request.query, limit }),
          limit,
          clickToApi,
        );
      },
    );
  };
}
