/**
 * NUL characters in input: PostgreSQL text cannot hold them (it fails the statement), so
 * they are refused at the edge, the same way on both dialects: in a path they can only be a
 * non-existent id (404); in a query string or body they are a validation error (422).
 * Routes that must never lose a request (the tracking link) opt out and clean their input.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route strips NUL characters itself instead of refusing them. */
    cleansNulBytes?: boolean;
  }
}

/** Path of the first string containing a NUL character, or null. */
export function findNul(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], path ? `${path}.${i}` : String(i));
      if (found !== null) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key.includes('\u0000')) return path ? `${path}.${key}` : key;
      const found = findNul(inner, path ? `${path}.${key}` : key);
      if (found !== null) return found;
    }
  }
  return null;
}

export async function refuseNulBytes(request: FastifyRequest): Promise<void> {
  if (request.routeOptions.config?.cleansNulBytes) return;
  if (findNul(request.params) !== null) throw new ApiError('not_found', 'Not found.');
  const inQuery = findNul(request.query);
  if (inQuery !== null)
    throw ApiError.validation([{ path: `query.${inQuery}`, message: 'must not contain NUL characters' }]);
  const inBody = findNul(request.body);
  if (inBody !== null) throw ApiError.validation([{ path: inBody, message: 'must not contain NUL characters' }]);
}
