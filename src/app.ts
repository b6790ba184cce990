/**
 * Builds the Fastify application: infrastructure plugins, then feature routes. Tests call
 * `buildApp` and drive it with `inject`; `serve` listens on a port.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type RouteOptions,
} from 'fastify';
import type { AppContext } from './context.js';
import { apiKeyHook, brandKeyLimit, countValidKey, keyedNotFound } from './http/auth.js';
import { fastifyTrustProxy } from './http/clientAddress.js';
import { answerClientError, refuseCodedBodies, registerClientErrorAnswers } from './http/clientErrors.js';
import { ApiError, isApiUrl, registerErrorHandling, sendError, toApiError } from './http/errors.js';
import { idempotency } from './http/idempotency.js';
import { jsonShapeProblem, refuseUnacceptableInput } from './http/inputText.js';
import { answerNoRoute, KnownPaths } from './http/knownPaths.js';
import { type OpenApiOptions, registerOpenApi } from './http/openapi.js';
import { ErrorBody } from './http/schemas.js';
import { serverTimeouts } from './http/timeouts.js';
import { registerValidators } from './http/validation.js';
import { brandRoutes } from './modules/brands/routes.js';
import { clickRoutes, trackingRoutes } from './modules/clicks/routes.js';
import { pixelPostbackRoutes, pixelTokenRoutes } from './modules/conversions/pixel.js';
import { conversionRoutes } from './modules/conversions/routes.js';
import { sendErrorPage } from './modules/dashboard/errors.js';
import { dashboardRoutes } from './modules/dashboard/routes.js';
import { DASHBOARD_PATH } from './modules/dashboard/session.js';
import { eventRoutes } from './modules/events/routes.js';
import { fraudRoutes } from './modules/fraud/routes.js';
import { healthRoutes } from './modules/health/routes.js';
import { observeRequests, registerMetricsRoute } from './modules/metrics/routes.js';
import { offerRoutes } from './modules/offers/routes.js';
import { partnerApiRoutes, partnerKeyLimit } from './modules/partnerKeys/routes.js';
import { partnerPublicRoutes, sendApplicationError } from './modules/partners/publicRoutes.js';
import { partnerRoutes } from './modules/partners/routes.js';
import { payoutRoutes } from './modules/payouts/routes.js';
import { portalApiRoutes } from './modules/portal/apiRoutes.js';
import { sendPortalError } from './modules/portal/respond.js';
import { portalRoutes } from './modules/portal/routes.js';
import { PORTAL_PATH } from './modules/portal/web.js';
import { postbackRoutes } from './modules/postbacks/routes.js';
import { reportRoutes } from './modules/reports/routes.js';
import { webhookDocument } from './modules/webhooks/openapi.js';
import { webhookCatalogueRoutes, webhookRoutes } from './modules/webhooks/routes.js';
import { type ErrorPage, isUnder, sendRouterRefusal } from './web/routerRefusal.js';
import { securityHeaders } from './web/securityHeaders.js';
import { publicAssets } from './web/views/PublicPage.js';

export const API_PREFIX = '/api/v1';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** Methods whose API routes validate a body: DELETE takes none, so any field in one is 422. */
const VALIDATED_BODY_METHODS = new Set([...BODY_METHODS, 'DELETE']);
/** Logger levels at which the one line per request is written. */
const REQUEST_LOG_LEVELS = new Set(['trace', 'debug', 'info']);

/** Accepts only plain request ids from clients, so they are safe to echo and to log. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The pages' addresses, and each side's error page for an address the router refused. */
const PAGE_SIDES: readonly (readonly [string, ErrorPage])[] = [
  [DASHBOARD_PATH, sendErrorPage],
  [PORTAL_PATH, sendPortalError],
  ['/apply', sendApplicationError],
];

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const timeouts = serverTimeouts(ctx.config.requestTimeoutMs);
  const app = Fastify({
    loggerInstance: ctx.logger,
    // Fastify's own two lines per request are replaced by one (onResponse hook below).
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: fastifyTrustProxy(ctx.config.trustProxy),
    bodyLimit: ctx.config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Ids longer than find-my-way's default 100 characters still reach their route, which
    // answers its own 404 with the usual headers (a request id, rate-limit counters).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Slow clients must not hold sockets for ever, and are told so with a 408 (http/timeouts.ts).
    connectionTimeout: timeouts.idleTimeout,
    requestTimeout: timeouts.requestTimeout,
    // Requests the HTTP parser refuses, and the two checks Node and Fastify would answer in
    // their own shapes, are answered in the API's error shape (http/clientErrors.ts).
    clientErrorHandler: (error, socket) => answerClientError(ctx.logger, error, socket),
    http: {
      requireHostHeader: false,
      requestTimeout: timeouts.requestTimeout,
      headersTimeout: timeouts.headersTimeout,
      connectionsCheckingInterval: timeouts.connectionsCheckingInterval,
    },
    return503OnClosing: false,
    // Errors the router raises before any handler (bad percent-encoding, over-long
    // parameters) are answered in the API's error shape too, and with an HTML page for
    // the dashboard's, the portal's and the application form's addresses, as a browser
    // opened them.
    frameworkErrors: (error, request, reply) => {
      const code = (error as { code?: string }).code;
      const refusal =
        code === 'FST_ERR_BAD_URL' ? 'undecodable' : code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'overlong' : null;
      const page = PAGE_SIDES.find(([prefix]) => isUnder(request.url, prefix))?.[1];
      if (refusal && page) return sendRouterRefusal(reply, request, refusal, page);
      if (code === 'FST_ERR_MAX_PARAM_LENGTH')
        return answerRouterRefusal(ctx, request, reply, ApiError.notFound('Resource'));
      if (code === 'FST_ERR_BAD_URL') {
        return answerRouterRefusal(ctx, request, reply, new ApiError('bad_request', 'The URL is not validly encoded.'));
      }
      return sendError(reply, toApiError(error));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerValidators(app);
  // Every API route's path and methods, for the 405 (and OPTIONS) of a known path.
  const knownPaths = new KnownPaths();
  app.addHook('onRoute', knownPaths.record);
  app.addHook('onRoute', closeBodilessApiRoutes);
  app.addHook('onRoute', closeQuerylessApiRoutes);
  app.addHook('onRoute', refuseCodedBodies);
  app.addHook('onRoute', idempotency(ctx).attach);
  registerErrorHandling(app, (request, reply) => answerNoRoute(request, reply, knownPaths));
  registerJsonParser(app);
  const refuseUnservable = registerClientErrorAnswers(app, timeouts);

  // The hooks every request runs take a callback rather than being async: an async hook
  // costs Fastify a promise and a turn of the microtask queue each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    // API answers are per key and per moment, some carry secrets (a postback token, an invite
    // link, a rotated webhook secret): no shared or browser cache may keep one. Set here, in the
    // hook every request already runs, so the hot GET /api/v1/offers pays one prefix test.
    if (isApiUrl(request.url)) reply.header('cache-control', 'no-store');
    refuseUnservable(request, reply);
    done();
  });
  // A write sent without a body (or with an empty JSON body) is validated as `{}`: bodiless
  // POSTs with only optional fields succeed, and others list their required fields.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined && VALIDATED_BODY_METHODS.has(request.method)) request.body = {};
    done();
  });
  app.addHook('preValidation', refuseUnacceptableInput);
  // One log line per request (instead of Fastify's two) keeps logging cheap; the URL is
  // logged without its query string, which may carry tokens. Below `info` the line would be
  // dropped anyway, so there is no hook at all.
  if (REQUEST_LOG_LEVELS.has(ctx.logger.level)) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          path: request.url.split('?')[0],
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      );
      done();
    });
  }

  // Metrics cost nothing when off: the hook and the route exist only when configured.
  if (ctx.metrics) observeRequests(app, ctx.metrics);
  registerMetricsRoute(app, ctx);

  app.addSchema(ErrorBody);

  await registerOpenApi(app, apiDocument());
  await app.register(apiDocs);

  app.get(`${API_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());

  await app.register(publicAssets.plugin, { prefix: '/assets' });
  await app.register(healthRoutes(ctx));
  await app.register(partnerPublicRoutes(ctx));
  await app.register(trackingRoutes(ctx));
  await app.register(pixelPostbackRoutes(ctx));
  await app.register(dashboardRoutes(ctx));
  await app.register(portalRoutes(ctx));
  await app.register(
    async (api) => {
      api.addHook('onRequest', apiKeyHook(ctx));
      api.setNotFoundHandler(keyedNotFound(ctx, [brandKeyLimit, partnerKeyLimit], knownPaths));
      await api.register(brandRoutes(ctx));
      await api.register(offerRoutes(ctx));
      await api.register(partnerRoutes(ctx));
      await api.register(conversionRoutes(ctx));
      await api.register(reportRoutes(ctx));
      await api.register(clickRoutes(ctx));
      await api.register(fraudRoutes(ctx));
      await api.register(postbackRoutes(ctx));
      await api.register(pixelTokenRoutes(ctx));
      await api.register(payoutRoutes(ctx));
      await api.register(portalApiRoutes(ctx));
    },
    { prefix: API_PREFIX },
  );
  await app.register(partnerApiRoutes(ctx), { prefix: `${API_PREFIX}/partner` });
  await app.register(webhookCatalogueRoutes());
  await app.register(
    async (api) => {
      api.addHook('onRequest', apiKeyHook(ctx));
      api.setNotFoundHandler(keyedNotFound(ctx, [brandKeyLimit], knownPaths));
      await api.register(webhookRoutes(ctx));
      await api.register(eventRoutes(ctx));
    },
    { prefix: '/api/public' },
  );
  return app;
}

/**
 * An address the router refuses under a keyed prefix — a path parameter over 1,000 characters
 * (404: it matches no route) or a bad %-escape (400) — reaches no route, so no hook counts its
 * key: the answer counts a valid key of the prefix as keyedNotFound does (README: every keyed
 * response carries the RateLimit-* headers) and carries the headers, or is 429. The key is not
 * required: like a path that matches no route, the address is refused whatever the key, so an
 * invalid or missing one gets the same 404 or 400 (no counter), not 401.
 */
function answerRouterRefusal(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, refusal: ApiError): void {
  const url = request.url;
  const limits = url.startsWith(`${API_PREFIX}/`)
    ? [brandKeyLimit, partnerKeyLimit]
    : url.startsWith('/api/public/')
      ? [brandKeyLimit]
      : [];
  countValidKey(ctx, request, reply, limits).then(
    () => sendError(reply, refusal),
    (error: unknown) => sendError(reply, toApiError(error)),
  );
}

/** What the OpenAPI document says beyond the routes: the API as a whole, its tags, keys and webhooks. */
function apiDocument(): OpenApiOptions {
  const { schemas, webhooks } = webhookDocument();
  return {
    description:
      'Affiliate tracking: offers, partners, clicks, conversions, reports and signed webhooks. ' +
      'Authenticate with `Authorization: Bearer <API key>`. Errors are `{ "error": { "code", "message", "requestId" } }`; ' +
      'POSTs take an `Idempotency-Key`. Lists are `{ data, nextCursor }`, newest first. A path asked with a method ' +
      'it does not take is 405 `method_not_allowed` with an `Allow` header (OPTIONS on it: 204 with `Allow`); ' +
      'an unknown path is 404.',
    tags: [
      { name: 'brand', description: 'The brand that owns the API key: time zone, currency, fraud settings.' },
      { name: 'offers', description: 'Promotions with payouts, caps and a destination URL.' },
      { name: 'partners', description: 'Affiliates: applications, approval, bans, portal invites.' },
      { name: 'conversions', description: 'Recorded results: server-side postbacks, approval and rejection.' },
      { name: 'clicks', description: 'Clicks on tracking links, with fraud scores and enrichment.' },
      {
        name: 'reports',
        description: 'Aggregated clicks, conversions and money by day, week, month, offer or partner.',
      },
      { name: 'fraud', description: "The brand's blocklist of IPs, networks and user agents." },
      { name: 'postbacks', description: 'Pixel postbacks from advertisers and postback URLs of partners.' },
      { name: 'payouts', description: 'Payout runs over approved conversions, and partner balances.' },
      { name: 'webhooks', description: 'Subscriptions, the event catalogue, the delivery log, and the events sent.' },
      { name: 'partner API', description: "A partner's own data, with a partner key (afp_…)." },
      { name: 'tracking', description: 'The public tracking link.' },
      { name: 'health', description: 'Liveness and readiness probes.' },
    ],
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key of one brand (afk_…).' },
      partnerKey: {
        type: 'http',
        scheme: 'bearer',
        description: 'Partner API key (afp_…), created by a partner in the portal; reads that partner’s data only.',
      },
    },
    schemas,
    webhooks,
  };
}

/**
 * The rendered API reference at /docs, under the pages' security headers and CSP. The base
 * layout leaves out swagger-ui's top bar: its logo is an inline <style> the CSP refuses, and
 * its box for loading another spec could only fetch this origin anyway (connect-src 'self').
 */
async function apiDocs(scope: FastifyInstance): Promise<void> {
  await securityHeaders(scope);
  // swagger-ui finds the document at the page's address + "/json", query string included:
  // /docs?utm_source=x would load "/docs?utm_source=x/json" and show no operation at all.
  scope.addHook('onRequest', async (request, reply) => {
    const [path, query] = request.url.split('?', 2);
    if (query !== undefined && (path === '/docs' || path === '/docs/')) return reply.redirect('/docs', 302);
  });
  await scope.register(swaggerUi, { routePrefix: '/docs', uiConfig: { layout: 'BaseLayout' } });
}

/** No body fields: a bodiless action route (`POST /conversions/:id/approve`) refuses any field. */
const NO_FIELDS = Type.Object({}, { additionalProperties: false, description: 'No fields.' });

/**
 * Unknown fields are 422 on every API body, including action routes and DELETEs that declare
 * none: such a route gets an empty closed body schema (an empty or absent body is still
 * accepted; `{"force":true}`, `[]` or `"x"` on a DELETE is 422, not ignored).
 */
function closeBodilessApiRoutes(route: RouteOptions): void {
  if (!route.url.startsWith('/api/')) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (!methods.some((method) => VALIDATED_BODY_METHODS.has(method))) return;
  route.schema ??= {};
  route.schema.body ??= NO_FIELDS;
}

/** No query parameters: a route that reads none refuses any (`POST /webhooks?secret=…`). */
const NO_PARAMETERS = Type.Object({}, { additionalProperties: false });

/**
 * Unknown query parameters are 422 on every API operation, as on the lists: a field put in
 * the query instead of the body (`POST /api/public/webhooks?secret=…`, which would create an
 * unsigned subscription) must not be a silent no-op. Routes that declare no query string get
 * an empty closed one; the document itself (hidden) takes any.
 */
function closeQuerylessApiRoutes(route: RouteOptions): void {
  if (!route.url.startsWith('/api/') || route.schema?.hide) return;
  route.schema ??= {};
  route.schema.querystring ??= NO_PARAMETERS;
}

/**
 * JSON bodies: an empty body with a JSON content type means "no body" (clients send the
 * header on every request, including bodiless POSTs); anything unparsable is 400.
 */
function registerJsonParser(app: FastifyInstance): void {
  // Only JSON (and, on the form routes, urlencoded) bodies are accepted: text/plain is 415.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // JSON is UTF-8 (RFC 8259 §8.1). Decoding other bytes would store U+FFFD in their place:
    // text altered without a word, so non-ASCII in another charset is 415 and broken UTF-8 is 400.
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(String(request.headers['content-type']))?.[1];
    const bytes = body as Buffer;
    // ASCII reads the same in any charset a client may name (us-ascii, latin1…).
    if (charset !== undefined && !/^utf-?8$/i.test(charset) && !isAscii(bytes)) {
      return done(
        new ApiError('unsupported_media_type', 'Send request bodies as application/json in UTF-8.'),
        undefined,
      );
    }
    if (!isUtf8(bytes)) return done(new ApiError('invalid_json', 'The request body is not valid UTF-8.'), undefined);
    const shape = jsonShapeProblem(bytes);
    if (shape) return done(ApiError.validation([{ ...shape, path: shape.path || 'body' }]), undefined);
    const text = bytes.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      // A "__proto__" key becomes a plain own property here and is then refused as an
      // unknown field by the strict body schemas.
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('invalid_json', 'The request body is not valid JSON.'), undefined);
    }
  });
}
