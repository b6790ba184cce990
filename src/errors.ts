/**
 * What services say when a request cannot be carried out, in the domain's words: the thing
 * is not there, the change is not allowed from its current state, or the input breaks a
 * rule. Services know nothing of HTTP; the edge (`http/domainErrors.ts`) turns each into a
 * status and an error code, the dashboard into a message beside a field, the CLI into a line.
 */

/** One broken rule: `path` names the field (dotted, '' for the whole input). */
export interface Problem {
  path: string;
  message: string;
}

export abstract class DomainError extends Error {}

/** The thing does not exist — or belongs to another brand, which must look the same. */
export class NotFoundError extends DomainError {
  constructor(readonly what: string) {
    super(`${what} not found.`);
  }
}

/** The change is not allowed from the current state (approving a rejected conversion, …). */
export class ConflictError extends DomainError {}

/** The input breaks one or more rules; every problem is listed. */
export class InvalidError extends DomainError {
  constructor(readonly problems: Problem[]) {
    super(problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; '));
  }

  /** One problem at `path`. */
  static at(path: string, message: string): InvalidError {
    return new InvalidError([{ path, message }]);
  }
}

/**
 * Something the request needs is failing for now (a DNS resolver that timed out): not the
 * input's fault, so the caller may try again after `retryAfterSeconds`.
 */
export class UnavailableError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}
