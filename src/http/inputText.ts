/**
 * Text the two databases cannot store alike is refused at the edge, the same way on both:
 * - NUL characters: PostgreSQL text cannot hold them (the statement fails);
 * - lone UTF-16 surrogates (`"\ud800"` in JSON): not Unicode text at all. SQLite and
 *   PostgreSQL would store different replacements, and encoding them (a URL macro, a
 *   signature) throws.
 * In a path such text can only be a non-existent id (404); in a query string or body it is
 * a validation error (422). Routes that must never lose a request (the tracking link) opt
 * out and clean their input themselves.
 *
 * The same walk bounds the size of lists and objects before the schemas see them: no body
 * needs more than MAX_ENTRIES of either, and validating a huge list item by item (a 422
 * naming each of 30,000 bad items) held the event loop for seconds.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route makes its text storable itself (see clicks/routes.ts) instead of refusing it. */
    cleansText?: boolean;
    /**
     * The route takes %-escapes that are not UTF-8 as the query parser reads them (U+FFFD):
     * another server calls it (the pixel postback), and a Latin-1 `sub1=caf%E9` must not
     * cost the advertiser its conversion.
     */
    takesLegacyEscapes?: boolean;
  }
}

declare global {
  // ES2024 (Node 20 has them; the ES2023 lib this project targets does not declare them).
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** Items of a list, or keys of an object, in any request body or query string. */
export const MAX_ENTRIES = 1000;

const NUL = 'must not contain NUL characters';
const LONE_SURROGATE = 'must be well-formed Unicode (no lone UTF-16 surrogates)';

function problemOf(text: string): string | null {
  if (text.includes('\u0000')) return NUL;
  if (!text.isWellFormed()) return LONE_SURROGATE;
  return null;
}

/**
 * The first string (or key) that cannot be stored, or list or object over MAX_ENTRIES, with
 * its path, or null. Iterative, so a deeply nested body cannot overflow the stack.
 */
export function findRefusedInput(root: unknown): { path: string; message: string } | null {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      const message = problemOf(value);
      if (message) return { path, message };
    } else if (value instanceof URLSearchParams) {
      // Form bodies (the dashboard's) are checked like JSON ones.
      for (const [key, inner] of value) stack.push({ value: inner, path: path ? `${path}.${key}` : key });
    } else if (value && typeof value === 'object') {
      const entries = Object.entries(value);
      if (entries.length > MAX_ENTRIES) {
        const message = Array.isArray(value)
          ? `must list at most ${MAX_ENTRIES} items`
          : `must have at most ${MAX_ENTRIES} keys`;
        return { path, message };
      }
      for (const [key, inner] of entries) {
        const innerPath = path ? `${path}.${key}` : key;
        const message = problemOf(key);
        // The path is echoed in the answer: made printable (the first bad key ends the walk).
        if (message) return { path: innerPath.replaceAll('\u0000', '').toWellFormed(), message };
        stack.push({ value: inner, path: innerPath });
      }
    }
  }
  return null;
}

/**
 * The name of the first query parameter holding %-escapes that are not UTF-8 (`%ED%A0%80`,
 * `%C0%AF`; '' when the name itself is odd), or null: the parser would read them as U+FFFD,
 * text altered without a word. A lone `%` is left to it.
 */
function undecodableParameter(url: string): string | null {
  const start = url.indexOf('?');
  if (start === -1 || !url.includes('%', start)) return null;
  for (const pair of url.slice(start + 1).split('&')) {
    for (const run of pair.matchAll(/(?:%[0-9A-Fa-f]{2})+/g)) {
      try {
        decodeURIComponent(run[0]);
      } catch {
        const name = pair.split('=', 1)[0] as string;
        return /^[\w.-]+$/.test(name) ? name : '';
      }
    }
  }
  return null;
}

/** A preValidation hook (a callback one: an async hook costs a promise per request). */
export function refuseUnacceptableInput(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (error?: Error) => void,
): void {
  done(refusedInputError(request));
}

function refusedInputError(request: FastifyRequest): ApiError | undefined {
  const config = request.routeOptions.config;
  if (config?.cleansText) return undefined;
  const undecodable = config?.takesLegacyEscapes ? null : undecodableParameter(request.url);
  if (undecodable !== null) {
    const path = undecodable ? `query.${undecodable}` : 'query';
    return ApiError.validation([{ path, message: 'must be percent-encoded UTF-8' }]);
  }
  if (findRefusedInput(request.params) !== null) return new ApiError('not_found', 'Not found.');
  const inQuery = findRefusedInput(request.query);
  if (inQuery !== null) {
    return ApiError.validation([{ path: inQuery.path ? `query.${inQuery.path}` : 'query', message: inQuery.message }]);
  }
  const inBody = findRefusedInput(request.body);
  if (inBody !== null) return ApiError.validation([{ path: inBody.path || 'body', message: inBody.message }]);
  return undefined;
}
