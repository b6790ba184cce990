/**
 * The one place domain errors (src/errors.ts) get their HTTP answer: an error code of the
 * API (which fixes the status, http/errors.ts) and the message. The service's words pass
 * through unchanged; a validation message lists every problem, as for schema errors.
 */
import { ConflictError, InvalidError, NotFoundError, type Problem, UnavailableError } from '../errors.js';
import { MAX_DETAILS } from './validationErrors.js';

export interface DomainErrorAnswer {
  code: 'not_found' | 'conflict' | 'validation_error' | 'service_unavailable';
  message: string;
  details?: Problem[];
  /** Seconds a client should wait before trying again (`Retry-After`). */
  retryAfterSeconds?: number;
}

/** The API's answer to a domain error, or null when `error` is none. */
export function answerDomainError(error: unknown): DomainErrorAnswer | null {
  if (error instanceof NotFoundError) return { code: 'not_found', message: error.message };
  if (error instanceof ConflictError) return { code: 'conflict', message: error.message };
  if (error instanceof InvalidError) {
    // At most MAX_DETAILS, as for the schema's problems (GET /reports adds its own to those).
    const listed = error.problems.length > MAX_DETAILS ? new InvalidError(error.problems.slice(0, MAX_DETAILS)) : error;
    return { code: 'validation_error', message: `Validation failed: ${listed.message}.`, details: listed.problems };
  }
  if (error instanceof UnavailableError) {
    return { code: 'service_unavailable', message: error.message, retryAfterSeconds: error.retryAfterSeconds };
  }
  return null;
}
