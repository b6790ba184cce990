/**
 * The public side of partner applications: the JSON endpoint, and a plain HTML form that
 * works without JavaScript (a classic form post, answered with a page).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { acceptsHtml } from '../../http/accept.js';
import { enforceClientRateLimit } from '../../http/auth.js';
import { type ApiError, logFailure, sendError, toApiError } from '../../http/errors.js';
import { errorResponses, Resource } from '../../http/schemas.js';
import { formValidatorCompiler } from '../../http/validation.js';
import { formBodies } from '../../web/formBodies.js';
import { sendPage } from '../../web/page.js';
import { securityHeaders } from '../../web/securityHeaders.js';
import { findBrandBySlug } from '../brands/repository.js';
import { describeIssues, Problems } from '../dashboard/forms.js';
import { MAX_URL_LENGTH } from '../urls.js';
import { ApplicationErrorPage, ApplicationPage, ConfirmationPage, NoProgrammePage } from './applyPage.js';
import { ApplyBody } from './schemas.js';
import { applyAsPartner } from './service.js';

const SlugParams = Type.Object({ brandSlug: Type.String({ maxLength: 100 }) });

/** The form's fields as typed: their content is checked below, with messages for people. */
const ApplicationForm = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    website: Type.Optional(Type.String({ maxLength: MAX_URL_LENGTH })),
  },
  { additionalProperties: false },
);
type ApplicationForm = Static<typeof ApplicationForm>;
/** The form has always asked for a dot in the domain, on top of the schema's `email` format. */
const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function limitPerIp(ctx: AppContext) {
  return (request: FastifyRequest, reply: FastifyReply) =>
    enforceClientRateLimit(ctx, request, reply, 'apply', ctx.config.applyRateLimitPerMinute);
}

export function partnerPublicRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/api/public/partners/apply',
      {
        onRequest: limitPerIp(ctx),
        config: { rateLimited: true },
        schema: {
          operationId: 'applyAsPartner',
          tags: ['partners'],
          summary: 'Public partner application (no API key; rate-limited per client IP). Fires partner.applied.',
          description:
            'Each application is a new applicant for the brand to review (approve or ban), also one repeating an e-mail ' +
            'address: the form does not tell a visitor whether an address has applied before. The 409 is only ' +
            '`idempotency_key_in_use`, for a retry sent with the same Idempotency-Key while the first is running.',
          body: ApplyBody,
          response: {
            201: Resource('PartnerApplication', { id: Type.String(), status: Type.Literal('applicant') }),
            ...errorResponses(400, 422, 429),
          },
        },
      },
      async (request, reply) => {
        const row = await applyAsPartner(ctx, request.body);
        return reply.code(201).send({ id: row.id, status: 'applicant' as const });
      },
    );

    await app.register(applicationPages(ctx));
  };
}

/**
 * The application form's error page (PAGE_SIDES in app.ts, and the form's error handler): a
 * page, as a browser opened the form. A refused post links back to the form it came from.
 */
export function sendApplicationError(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
): Promise<FastifyReply> {
  const slug = (request.params as { brandSlug?: unknown } | undefined)?.brandSlug;
  const posted = request.method === 'POST' && typeof slug === 'string' && status !== 404;
  const formPath = posted ? `/apply/${encodeURIComponent(slug)}` : undefined;
  return sendPage(reply, <ApplicationErrorPage status={status} message={message} formPath={formPath} />, status);
}

/**
 * What a person is told when the form's post is refused before it is read. The API's
 * messages speak to programs ("Send request bodies as application/json"), wrong for a
 * person who pressed the form's button.
 */
function messageForPeople(failure: ApiError): string {
  switch (failure.status) {
    case 429:
      return `Too many applications were sent from your network in the last minute. Please wait ${failure.headers?.['Retry-After'] ?? 60} seconds and send the form again.`;
    case 413:
      return 'What was sent is more than this form takes. Please shorten your entries and send the form again.';
    case 415:
      return 'The application did not arrive as the form sends it. Please open the form and send it from there.';
    case 503:
      return 'The service is temporarily unavailable. Please send the form again in a moment.';
  }
  return failure.status >= 500 ? 'Something went wrong on our side. Please try again later.' : failure.message;
}

/** The HTML form, in its own scope: page security headers and form bodies apply here only. */
function applicationPages(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (pages) => {
    await securityHeaders(pages);
    await formBodies(pages);
    pages.setValidatorCompiler(formValidatorCompiler);
    // What is refused before the form is read (the rate limit, a body too large or not a form
    // post) or fails on our side: a page for a browser, as the tracking link answers a
    // visitor, and the API's JSON for a client that asks for JSON alone.
    pages.setErrorHandler((error, request, reply) => {
      const failure = logFailure(request, error);
      if (!acceptsHtml(request.headers.accept)) return sendError(reply, failure);
      reply.headers(failure.headers ?? {}).header('cache-control', 'no-store');
      return sendApplicationError(reply, request, failure.status, messageForPeople(failure));
    });

    pages.get('/apply/:brandSlug', { schema: { hide: true, params: SlugParams } }, async (request, reply) => {
      const brand = await findBrandBySlug(ctx.db, request.params.brandSlug);
      if (!brand) return sendPage(reply, <NoProgrammePage />, 404);
      return sendPage(reply, <ApplicationPage brandName={brand.name} slug={brand.slug} />);
    });

    pages.post(
      '/apply/:brandSlug',
      {
        onRequest: limitPerIp(ctx),
        // A form the schema refuses is shown again with the problem, like any other mistake.
        attachValidation: true,
        schema: { hide: true, params: SlugParams, body: ApplicationForm },
      },
      async (request, reply) => {
        const brand = await findBrandBySlug(ctx.db, request.params.brandSlug);
        if (!brand) return sendPage(reply, <NoProgrammePage />, 404);
        const fields: ApplicationForm = (!request.validationError && request.body) || {};
        const input = {
          brandSlug: brand.slug,
          name: (fields.name ?? '').trim(),
          email: (fields.email ?? '').trim(),
          website: fields.website?.trim() || null,
        };
        try {
          // Every problem at once, as the JSON endpoint lists them: one round trip for three mistakes.
          const problems = new Problems();
          if (request.validationError) problems.details.push(...describeIssues(request.validationError.validation));
          else {
            if (!EMAIL_SHAPE.test(input.email)) problems.add('email', 'must be an email address');
            problems.check(ApplyBody, input);
          }
          problems.throwIfAny();
          await applyAsPartner(ctx, input);
          return sendPage(reply, <ConfirmationPage brandName={brand.name} />);
        } catch (error) {
          const apiError = toApiError(error);
          if (apiError.status >= 500) throw error;
          const page = <ApplicationPage brandName={brand.name} slug={brand.slug} error={apiError} values={fields} />;
          return sendPage(reply, page, apiError.status);
        }
      },
    );
  };
}
