/**
 * Where GET /metrics is served: on its own port (METRICS_PORT, for a scraper inside the
 * network only) or, without one, on the API's port behind `Authorization: Bearer
 * <METRICS_TOKEN>`. With a port and a token, the port asks for the token too.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import type { Metrics } from './metrics.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether `header` carries the token; compared as digests, in constant time. */
export function carriesToken(header: string | undefined, token: string): boolean {
  const given = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

/**
 * Observes every request's duration by route pattern (`/api/v1/offers/:id`, never the raw
 * URL); requests no route matched share one label. Registered only when metrics are on.
 */
export function observeRequests(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: reply.statusCode },
      reply.elapsedTime / 1000,
    );
  });
}

/** The metrics token is asked for in the same words and the same challenge on both ports. */
const TOKEN_REFUSED = () => ApiError.unauthorized('Send the metrics token as "Authorization: Bearer <METRICS_TOKEN>".');

/**
 * The metrics port is a plain Node server (no Fastify, no hooks), so it writes the API's
 * error shape itself: `{ error: { code, message, requestId } }` with X-Request-Id and the
 * error's headers (the 401's realm), as every answer of Affitrack has it.
 */
function answerError(res: ServerResponse, error: ApiError): void {
  const requestId = randomUUID();
  const body = JSON.stringify({ error: { code: error.code, message: error.message, requestId } });
  res
    .writeHead(error.status, {
      ...error.headers,
      'x-request-id': requestId,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    })
    .end(body);
}

/** GET /metrics on the API's own port, behind the token (when no METRICS_PORT is set). */
export function registerMetricsRoute(app: FastifyInstance, ctx: AppContext): void {
  const { metrics } = ctx;
  const token = ctx.config.metricsToken;
  if (!metrics || token === null || ctx.config.metricsPort !== null) return;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!carriesToken(request.headers.authorization, token)) throw TOKEN_REFUSED();
    const { body, contentType } = await metrics.scrape();
    return reply.type(contentType).header('cache-control', 'no-store').send(body);
  });
}

/** The metrics port's own small server; null unless METRICS_PORT is set. */
export async function startMetricsServer(ctx: AppContext): Promise<Server | null> {
  const { metrics } = ctx;
  const { metricsPort, metricsToken, host } = ctx.config;
  if (!metrics || metricsPort === null) return null;
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      // As the API's noRoute words it; the path only, never a query string that may hold a token.
      return answerError(res, new ApiError('not_found', `No route for ${req.method} ${path}.`));
    }
    if (metricsToken !== null && !carriesToken(req.headers.authorization, metricsToken)) {
      return answerError(res, TOKEN_REFUSED());
    }
    metrics.scrape().then(
      ({ body, contentType }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (error) => {
        ctx.logger.error({ err: error }, 'could not collect metrics');
        answerError(res, new ApiError('internal_error', 'Could not collect metrics.'));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(metricsPort, host, () => resolve());
  });
  return server;
}
