/**
 * The one place domain errors (src/errors.ts) get their HTTP answer: an error code of the
 * API (which fixes the status, http/errors.ts) and the message. The service's words pass
 * through unchanged; a validation message lists every problem, as for schema errors.
 */
import { ConflictError, InvalidError, NotFoundError, type Problem } from '../errors.js';

export interface DomainErrorAnswer {
  code: 'not_found' | 'conflict' | 'validation_error';
  message: string;
  details?: Problem[];
}

/** The API's answer to a domain error, or null when `error` is none. */
export function answerDomainError(error: unknown): DomainErrorAnswer | null {
  if (error instanceof NotFoundError) return { code: 'not_found', message: error.message };
  if (error instanceof ConflictError) return { code: 'conflict', message: error.message };
  if (error instanceof InvalidError) {
    return { code: 'validation_error', message: `Validation failed: ${error.message}.`, details: error.problems };
  }
  return null;
}
