/**
 * The public side of partner applications: the JSON endpoint, and a plain HTML form that
 * works without JavaScript (form post) and, with it, posts JSON and shows the answer inline.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { enforceRateLimit } from '../../http/auth.js';
import { ApiError, toApiError } from '../../http/errors.js';
import { errorResponses } from '../../http/schemas.js';
import { findBrandBySlug } from '../brands/repository.js';
import { applicationPage, confirmationPage, notFoundPage } from './applyPage.js';
import { ApplyBody } from './schemas.js';
import { applyAsPartner } from './service.js';

function limitPerIp(ctx: AppContext) {
  return (request: FastifyRequest, reply: FastifyReply) =>
    enforceRateLimit(ctx, request, reply, `apply:${request.ip}`, ctx.config.applyRateLimitPerMinute);
}

export function partnerPublicRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/api/public/partners/apply',
      {
        onRequest: limitPerIp(ctx),
        schema: {
          tags: ['partners'],
          summary: 'Public partner application (no API key; rate-limited per client IP). Fires partner.applied.',
          body: ApplyBody,
          response: {
            201: Type.Object({ id: Type.String(), status: Type.Literal('applicant') }),
            ...errorResponses(400, 422, 429),
          },
        },
      },
      async (request, reply) => {
        const row = await applyAsPartner(ctx, request.body);
        return reply.code(201).send({ id: row.id, status: 'applicant' as const });
      },
    );

    app.get(
      '/apply/:brandSlug',
      { schema: { hide: true, params: Type.Object({ brandSlug: Type.String() }) } },
      async (request, reply) => {
        const brand = await findBrandBySlug(ctx.db, request.params.brandSlug);
        reply.type('text/html; charset=utf-8');
        if (!brand) return reply.code(404).send(notFoundPage());
        return applicationPage(brand.name, brand.slug);
      },
    );

    // The no-JavaScript path: a classic form post, answered with a page.
    await app.register(async (form) => {
      form.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
        done(null, Object.fromEntries(new URLSearchParams(String(body)))),
      );
      form.post(
        '/apply/:brandSlug',
        {
          onRequest: limitPerIp(ctx),
          schema: { hide: true, params: Type.Object({ brandSlug: Type.String() }) },
        },
        async (request, reply) => {
          const fields = (request.body ?? {}) as Record<string, string>;
          const { brandSlug } = request.params as { brandSlug: string };
          const brand = await findBrandBySlug(ctx.db, brandSlug);
          reply.type('text/html; charset=utf-8');
          if (!brand) return reply.code(404).send(notFoundPage());
          const input = {
            brandSlug: brand.slug,
            name: (fields.name ?? '').trim(),
            email: (fields.email ?? '').trim(),
            website: fields.website?.trim() || null,
          };
          try {
            if (!input.name) throw ApiError.validation([{ path: 'name', message: 'is required' }]);
            if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(input.email)) {
              throw ApiError.validation([{ path: 'email', message: 'must be an email address' }]);
            }
            await applyAsPartner(ctx, input);
            return confirmationPage(brand.name);
          } catch (error) {
            const apiError = toApiError(error);
            if (apiError.status >= 500) throw error;
            return reply.code(apiError.status).send(applicationPage(brand.name, brand.slug, apiError, fields));
          }
        },
      );
    });
  };
}
