/**
 * Which methods each API path answers, so that a request the router finds no route for can
 * be told apart: a known path asked with another method (`DELETE /api/v1/brand`) is 405 with
 * an `Allow` header listing the methods it takes (RFC 9110 §15.5.6), `OPTIONS` on it is 204
 * with the same `Allow` (§9.3.7), and only a path that no route matches is 404.
 *
 * Fastify's router answers neither: it has no lookup by concrete path across methods. The
 * patterns are recorded from the `onRoute` hook, so every API route is known without a list
 * to keep in step. The lookup runs only on the not-found path; the routed requests pay nothing.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { ApiError, noRoute, sendError } from './errors.js';

/** Only the API answers in the error shape; the pages (dashboard, portal) have their own 404s. */
const API_PREFIX = '/api/';

interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

export class KnownPaths {
  private readonly byUrl = new Map<string, PathMethods>();

  /** `onRoute` hook: records the route's path pattern and methods. */
  readonly record = (route: RouteOptions): void => {
    if (!route.url.startsWith(API_PREFIX)) return;
    const path = withoutTrailingSlash(route.url);
    let entry = this.byUrl.get(path);
    if (!entry) {
      entry = { pattern: patternOf(path), methods: new Set() };
      this.byUrl.set(path, entry);
    }
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      entry.methods.add(method);
      // Fastify answers HEAD on every GET route (exposeHeadRoutes).
      if (method === 'GET') entry.methods.add('HEAD');
    }
  };

  /**
   * The methods the request's path answers, sorted, OPTIONS included; empty when no route
   * has the path (or it is outside the API).
   */
  allowed(url: string): string[] {
    const path = decodedPath(url);
    if (path === null || !path.startsWith(API_PREFIX)) return [];
    const methods = new Set<string>();
    for (const entry of this.byUrl.values()) {
      if (entry.pattern.test(path)) for (const method of entry.methods) methods.add(method);
    }
    if (methods.size > 0) methods.add('OPTIONS');
    return [...methods].sort();
  }
}

/**
 * Answers a request that matched no route: 204 with `Allow` to OPTIONS on a known path, 405
 * with `Allow` to another method there, else the 404 of an unknown route.
 */
export function answerNoRoute(request: FastifyRequest, reply: FastifyReply, known: KnownPaths): FastifyReply {
  const allowed = known.allowed(request.url);
  if (allowed.length === 0) return sendError(reply, noRoute(request));
  const allow = allowed.join(', ');
  if (request.method === 'OPTIONS') return reply.code(204).header('Allow', allow).send();
  const path = request.url.split('?')[0];
  return sendError(
    reply,
    new ApiError('method_not_allowed', `${request.method} is not allowed on ${path}: use ${allow}.`, undefined, {
      Allow: allow,
    }),
  );
}

/** The router ignores a trailing slash (app.ts `ignoreTrailingSlash`): so do the patterns. */
function withoutTrailingSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * The request's path as the router matches it: %-escapes decoded (`/api/v1/%6Fffers` is
 * `/offers`) except those of a separator (`%2F` stays inside one segment), as decodeURI does;
 * null when it cannot be decoded (the router refuses such a path before any handler).
 */
function decodedPath(url: string): string | null {
  const raw = url.split('?', 1)[0] as string;
  try {
    return withoutTrailingSlash(decodeURI(raw));
  } catch {
    return null;
  }
}

/**
 * A route's path as an anchored expression: `:name` matches one non-empty segment (or the
 * rest of one, `:id.json`), a trailing `*` anything, the rest literally.
 */
function patternOf(path: string): RegExp {
  const source = path
    .split(/(:\w+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : escapeRegExp(part)))
    .join('');
  return new RegExp(`^${source}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
