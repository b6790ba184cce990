/**
 * The one error class of the API and the handler that renders every failure as
 * `{ "error": { "code", "message", "details"? } }`. 5xx details go to the log only.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { answerDomainError } from './domainErrors.js';
import { type AjvIssue, detailsFromAjv, type ErrorDetail } from './validationErrors.js';

export const ERROR_CODES = {
  invalid_json: 400,
  bad_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  idempotency_key_in_use: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  expectation_failed: 417,
  validation_error: 422,
  invalid_cursor: 422,
  idempotency_key_reused: 422,
  rate_limit_exceeded: 429,
  headers_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The `WWW-Authenticate` challenge of every 401 of a keyed route. */
export const BEARER_CHALLENGE = 'Bearer realm="affitrack"';

export type { ErrorDetail };

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_CODES[code];
  }

  /**
   * 401 with the challenge RFC 9110 §11.6.1 requires of it: the keys are Bearer tokens
   * (RFC 6750), so a client or library that reads the header knows what to send.
   */
  static unauthorized(message: string): ApiError {
    return new ApiError('unauthorized', message, undefined, { 'WWW-Authenticate': BEARER_CHALLENGE });
  }

  static notFound(what: string): ApiError {
    return new ApiError('not_found', `${what} not found.`);
  }

  static validation(details: ErrorDetail[]): ApiError {
    return new ApiError('validation_error', describeDetails(details), details);
  }

  static conflict(message: string): ApiError {
    return new ApiError('conflict', message);
  }
}

/**
 * The spec says a 422 message "carries the validation details": list them in the text too
 * (as `InvalidError` does for the services' own rules, src/errors.ts).
 */
function describeDetails(details: ErrorDetail[]): string {
  const parts = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message));
  return `Validation failed: ${parts.join('; ')}.`;
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  // Also for requests refused before the onRequest hooks ran (a malformed URL, an over-long
  // path segment), which set both on every other answer.
  reply.header('X-Request-Id', reply.request.id);
  if (isApiUrl(reply.request.url)) reply.header('cache-control', 'no-store');
  const body: { code: string; message: string; details?: ErrorDetail[]; requestId: string } = {
    code: error.code,
    message: error.message,
    requestId: reply.request.id,
  };
  if (error.details) body.details = error.details;
  return reply.code(error.status).type('application/json; charset=utf-8').send({ error: body });
}

/**
 * Sockets to the database failing, SQLite's writer lock held by another process, and
 * SQLite's disk (or DATA_DIR's file system) full: none is the request's fault, and each
 * clears without it (the lock is released, an operator frees space).
 */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'SQLITE_BUSY', 'SQLITE_FULL']);
/**
 * PostgreSQL refusing or dropping the connection: SQLSTATE class 08 (connection), 28 (the
 * role may not log in), 57P (shut down, restarting), 53300 (too many connections), 3D000
 * (the database is gone, renamed) and 55000 (the database does not allow connections). Each
 * comes back on its own or with an operator's fix, never from the request: 503 for a request,
 * `database_unavailable` for a command (cliErrors.ts).
 */
export const PG_UNAVAILABLE = /^(08|28|57P)|^(53300|3D000|55000)$/;

/** True when the storage is unreachable rather than the request wrong: the client may retry. */
export function isStorageUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown; statusCode?: unknown } | null;
  if (!e) return false;
  // An error with an HTTP status is about the request: a client that hung up mid-body
  // (ECONNRESET "aborted", status 400) is not a database outage.
  if (typeof e.statusCode === 'number') return false;
  if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || PG_UNAVAILABLE.test(e.code))) return true;
  return (
    typeof e.message === 'string' &&
    /Connection terminated|connection timeout|Client has encountered a connection error/i.test(e.message)
  );
}

/**
 * A 422 whose only problem is the list cursor is `invalid_cursor` (a client holding a stale or
 * hand-made cursor learns that the cursor, not its filters, is wrong); otherwise
 * `validation_error`. Either way every problem is listed. Only a route whose query string
 * takes a cursor can have a stale one: elsewhere (`GET /reports?cursor=x`) `cursor` is an
 * unknown parameter like any other, and "pass nextCursor as given" would send the client
 * looking for a list that does not exist.
 */
function validationFailure(details: ErrorDetail[], takesCursor: boolean): ApiError {
  if (takesCursor && details.length > 0 && details.every((d) => d.path === 'query.cursor')) {
    return new ApiError(
      'invalid_cursor',
      "The cursor is not an id of this list's kind: pass nextCursor as given.",
      details,
    );
  }
  return ApiError.validation(details);
}

/**
 * The problems a route's schema found in a request it validates with `attachValidation`, as a
 * 422 lists them: the route adds its own rules' problems to the same answer.
 */
export function schemaProblems(request: FastifyRequest): ErrorDetail[] {
  const error = request.validationError as { validation?: AjvIssue[]; validationContext?: string } | undefined;
  return error?.validation ? detailsFromAjv(error.validation, error.validationContext) : [];
}

/** Whether the request's route declares a `cursor` in its query string (a list: http/schemas.ts `pageQuery`). */
function routeTakesCursor(request: FastifyRequest | undefined): boolean {
  const query = request?.routeOptions.schema?.querystring as { properties?: Record<string, unknown> } | undefined;
  return query?.properties?.cursor !== undefined;
}

/**
 * Maps anything thrown during a request onto an ApiError; `request` (the one that failed)
 * tells a stale list cursor from an unknown `cursor` parameter.
 */
export function toApiError(error: unknown, request?: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  const domain = answerDomainError(error);
  if (domain) {
    const headers =
      domain.retryAfterSeconds === undefined ? undefined : { 'Retry-After': `${domain.retryAfterSeconds}` };
    return new ApiError(domain.code, domain.message, domain.details, headers);
  }
  if (isStorageUnavailable(error)) {
    return new ApiError(
      'service_unavailable',
      'The service is temporarily unavailable. Please retry shortly.',
      undefined,
      {
        'Retry-After': '1',
      },
    );
  }
  const fe = error as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe?.validation) {
    return validationFailure(detailsFromAjv(fe.validation, fe.validationContext), routeTakesCursor(request));
  }
  switch (fe?.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('unsupported_media_type', 'Send request bodies as application/json.');
  }
  if (error instanceof SyntaxError && fe.statusCode === 400) {
    return new ApiError('invalid_json', 'The request body is not valid JSON.');
  }
  const status = fe?.statusCode;
  if (status === 413) return new ApiError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new ApiError('unsupported_media_type', 'Send request bodies as application/json.');
  if (status !== undefined && status >= 400 && status < 500) {
    return new ApiError('bad_request', 'The request could not be understood.');
  }
  return new ApiError('internal_error', 'Something went wrong on our side. Please retry later.');
}

/** The error's ApiError, after logging a failure on our side (5xx) with what caused it. */
export function logFailure(request: FastifyRequest, error: unknown): ApiError {
  const apiError = toApiError(error, request);
  if (apiError.status === 503) {
    request.log.warn({ err: error }, isStorageUnavailable(error) ? 'storage unavailable' : 'service unavailable');
  } else if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  return apiError;
}

/**
 * Whether an answer to `url` is an API answer, which no cache may keep (README "No caching"):
 * `/api/…`, and `/api` itself with or without a query string.
 */
export function isApiUrl(url: string): boolean {
  return url.startsWith('/api') && (url.length === 4 || url[4] === '/' || url[4] === '?');
}

/** `notFound` answers a request that matches no route (a 404, or a 405 for a known path: knownPaths.ts). */
export function registerErrorHandling(
  app: FastifyInstance,
  notFound: (request: FastifyRequest, reply: FastifyReply) => FastifyReply,
): void {
  app.setErrorHandler((error, request: FastifyRequest, reply) => sendError(reply, logFailure(request, error)));
  app.setNotFoundHandler(notFound);
}

/** The 404 of a request that matches no route. */
export function noRoute(request: FastifyRequest): ApiError {
  return new ApiError('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`);
}
