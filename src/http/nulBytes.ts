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

/**
 * Path of the first string (or key) containing a NUL character, or null. Iterative, so a
 * deeply nested body cannot overflow the stack.
 */
export function findNul(root: unknown): string | null {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (value instanceof URLSearchParams) {
      // Form bodies (the dashboard's) are checked like JSON ones.
      for (const [key, inner] of value) stack.push({ value: inner, path: path ? `${path}.${key}` : key });
    } else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        const innerPath = path ? `${path}.${key}` : key;
        if (key.includes('\u0000')) return innerPath;
        stack.push({ value: inner, path: innerPath });
      }
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
