/**
 * Bearer-key authentication and the per-key rate limit, as one onRequest hook for every
 * route that takes an API key. Every such response carries the RateLimit-* headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import type { AuthenticatedKey } from '../modules/apiKeys/service.js';
import { ApiError } from './errors.js';
import type { RateDecision } from './rateLimit.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthenticatedKey;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

export function setRateLimitHeaders(reply: FastifyReply, decision: RateDecision): void {
  reply.header('RateLimit-Limit', decision.limit);
  reply.header('RateLimit-Remaining', decision.remaining);
  reply.header('RateLimit-Reset', decision.resetSeconds);
}

/**
 * Counts one request against `key`; throws 429 once the window is used up. (`_request` is
 * unused since the limiter stopped logging per request; kept so callers stay unchanged.)
 */
export async function enforceRateLimit(
  ctx: AppContext,
  _request: FastifyRequest,
  reply: FastifyReply,
  key: string,
  limit: number,
): Promise<void> {
  // Never rejects: a shared-store outage is counted per process (see http/rateLimit.ts).
  const decision = await ctx.rateLimiter.hit(key, limit);
  setRateLimitHeaders(reply, decision);
  if (!decision.allowed) {
    ctx.metrics?.rateLimitRejections.inc({ scope: rateLimitScope(key) });
    throw new ApiError(
      'rate_limit_exceeded',
      `Rate limit of ${decision.limit} requests per minute exceeded. Retry in ${decision.resetSeconds} s.`,
      undefined,
      { 'Retry-After': String(decision.resetSeconds) },
    );
  }
}

/** The kind of limit a counter key belongs to (`postback:…`, `portal:…`; a bare key id is an API key's). */
function rateLimitScope(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? 'api_key' : key.slice(0, colon).replaceAll('-', '_');
}

export function apiKeyHook(ctx: AppContext) {
  return async function requireApiKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match?.[1]) {
      throw new ApiError('unauthorized', 'Send your API key as "Authorization: Bearer <API key>".');
    }
    const key = await ctx.authenticator.authenticate(match[1]);
    if (!key) throw new ApiError('unauthorized', 'The API key is invalid or has been revoked.');
    request.auth = key;
    await enforceRateLimit(
      ctx,
      request,
      reply,
      `key:${key.keyId}`,
      key.rateLimitPerMinute ?? ctx.config.rateLimitPerMinute,
    );
  };
}
