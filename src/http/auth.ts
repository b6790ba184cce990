/**
 * Bearer-key authentication and the per-key rate limit, as one onRequest hook for every
 * route that takes an API key. Every such response carries the RateLimit-* headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import type { AuthenticatedKey } from '../modules/apiKeys/service.js';
import { ipLimitKey } from './clientAddress.js';
import { ApiError } from './errors.js';
import { answerNoRoute, type KnownPaths } from './knownPaths.js';
import type { RateDecision } from './rateLimit.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthenticatedKey;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

/** The key sent as `Authorization: Bearer <key>`; null without one. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  return (header ? BEARER.exec(header)?.[1] : undefined) ?? null;
}

/** What a valid key is counted as: its rate-limit counter and its limit per minute. */
export interface KeyLimit {
  counter: string;
  limit: number;
}

/** A brand API key's limit; null for a token that is no valid brand key. */
export async function brandKeyLimit(ctx: AppContext, token: string): Promise<KeyLimit | null> {
  const key = await ctx.authenticator.authenticate(token);
  return key && { counter: `key:${key.keyId}`, limit: key.rateLimitPerMinute ?? ctx.config.rateLimitPerMinute };
}

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

/**
 * A limit per client address (sign-in forms, the application form): `scope` counted for the
 * request's client, an IPv6 one by its /64 (clientAddress.ts).
 */
export function enforceClientRateLimit(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: string,
  limit: number,
): Promise<void> {
  return enforceRateLimit(ctx, request, reply, `${scope}:${ipLimitKey(request.ip)}`, limit);
}

/** The kind of limit a counter key belongs to (`postback:…`, `portal:…`; a bare key id is an API key's). */
function rateLimitScope(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? 'api_key' : key.slice(0, colon).replaceAll('-', '_');
}

export function apiKeyHook(ctx: AppContext) {
  return async function requireApiKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // A path that matches no route is the not-found handler's (keyedNotFound), key or not.
    if (request.is404) return;
    const token = bearerToken(request);
    if (!token) throw ApiError.unauthorized('Send your API key as "Authorization: Bearer <API key>".');
    const key = await ctx.authenticator.authenticate(token);
    if (!key) throw ApiError.unauthorized('The API key is invalid or has been revoked.');
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

/**
 * The 404 of a keyed prefix (`/api/v1/…`, `/api/public/…`): a path that matches no route is
 * 404 whatever the key (DESIGN §2), and a known path asked with another method 405 whatever
 * the key (knownPaths.ts); but a valid key — of any kind `limits` knows — is counted like on
 * any other request under the prefix, so a key over its limit gets 429 and the 404 or 405
 * carries the RateLimit-* headers.
 */
export function keyedNotFound(
  ctx: AppContext,
  limits: ReadonlyArray<(ctx: AppContext, token: string) => Promise<KeyLimit | null>>,
  known: KnownPaths,
) {
  return async function notFound(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    await countValidKey(ctx, request, reply, limits);
    return answerNoRoute(request, reply, known);
  };
}

/** Counts the request against its key when it carries a valid one of a kind `limits` knows (429 when over). */
export async function countValidKey(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  limits: ReadonlyArray<(ctx: AppContext, token: string) => Promise<KeyLimit | null>>,
): Promise<void> {
  const token = bearerToken(request);
  for (const limitOf of token ? limits : []) {
    const key = await limitOf(ctx, token as string);
    if (!key) continue;
    await enforceRateLimit(ctx, request, reply, key.counter, key.limit);
    return;
  }
}
