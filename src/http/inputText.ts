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
import { type AjvIssue, detailsFromAjv, type ErrorDetail, MAX_DETAILS } from './validationErrors.js';

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
/** Lists and objects inside each other in a JSON body; no schema needs more than a few. */
export const MAX_DEPTH = 32;

const NUL = 'must not contain NUL characters';
const LONE_SURROGATE = 'must be well-formed Unicode (no lone UTF-16 surrogates)';

function problemOf(text: string): string | null {
  if (text.includes('\u0000')) return NUL;
  if (!text.isWellFormed()) return LONE_SURROGATE;
  return null;
}

/**
 * Every string (or key) that cannot be stored, with its path — or, for a list or object over
 * MAX_ENTRIES, that one problem alone (the walk stops there: a huge body is refused before
 * anything else looks at it). At most MAX_DETAILS. Iterative, so a deeply nested body cannot
 * overflow the stack.
 */
export function refusedInputs(root: unknown): { problems: ErrorDetail[]; oversized: boolean } {
  const problems: ErrorDetail[] = [];
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: '' }];
  while (stack.length > 0 && problems.length < MAX_DETAILS) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      const message = problemOf(value);
      if (message) problems.push({ path, message });
    } else if (value instanceof URLSearchParams) {
      // Form bodies (the dashboard's) are checked like JSON ones.
      if (value.size > MAX_ENTRIES) return oversized(path, false);
      for (const [key, inner] of value) stack.push({ value: inner, path: path ? `${path}.${key}` : key });
    } else if (value && typeof value === 'object') {
      // Listing is cheap here: the parsers bound what reaches this walk (JSON by
      // jsonShapeProblem, forms by parseForm, query strings by the URL's length).
      const entries = Object.entries(value);
      if (entries.length > MAX_ENTRIES) return oversized(path, Array.isArray(value));
      // Pushed in reverse, so problems come out in the body's own order.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, inner] = entries[i] as [string, unknown];
        const innerPath = path ? `${path}.${key}` : key;
        const message = problemOf(key);
        // The path is echoed in the answer: made printable (nothing under a bad key is looked at).
        if (message) problems.push({ path: innerPath.replaceAll('\u0000', '').toWellFormed(), message });
        else stack.push({ value: inner, path: innerPath });
      }
    }
  }
  return { problems, oversized: false };
}

function oversized(path: string, list: boolean): { problems: ErrorDetail[]; oversized: true } {
  const message = list ? `must list at most ${MAX_ENTRIES} items` : `must have at most ${MAX_ENTRIES} keys`;
  return { problems: [{ path, message }], oversized: true };
}

/** A list or object still open while jsonShapeProblem reads a body. */
interface OpenContainer {
  object: boolean;
  /** Commas read at this level: the entries so far, less one. */
  commas: number;
  /** Objects: whether the next string is a key; the last key read (raw JSON text). */
  expectKey: boolean;
  key: Uint8Array | null;
}

/**
 * What makes a JSON body too big to parse, read off its bytes before it is: lists and objects
 * nested more than MAX_DEPTH deep, or one holding more than MAX_ENTRIES entries, named as
 * refusedInputs names it. Parsing and walking 500,000 levels of `[[[…]]]` held the event loop
 * for 2 s, and parsing 80,000 keys 0.2 s, within the 1 MB body limit. Text in strings does
 * not count. A few nanoseconds a byte.
 */
export function jsonShapeProblem(bytes: Uint8Array): ErrorDetail | null {
  const open: OpenContainer[] = [];
  let stringStart = -1;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (stringStart !== -1) {
      if (byte === 0x5c)
        i++; // a backslash: the next byte is escaped
      else if (byte === 0x22) {
        const top = open[open.length - 1];
        if (top?.expectKey) top.key = bytes.subarray(stringStart, i + 1);
        stringStart = -1;
      }
    } else if (byte === 0x22) stringStart = i;
    else if (byte === 0x5b || byte === 0x7b) {
      if (open.length === MAX_DEPTH) {
        return { path: '', message: `must not nest lists and objects more than ${MAX_DEPTH} levels deep` };
      }
      const object = byte === 0x7b;
      open.push({ object, commas: 0, expectKey: object, key: null });
    } else if (byte === 0x5d || byte === 0x7d) open.pop();
    else if (byte === 0x3a) {
      const top = open[open.length - 1];
      if (top) top.expectKey = false;
    } else if (byte === 0x2c) {
      const top = open[open.length - 1];
      if (!top) continue;
      top.expectKey = top.object;
      if (++top.commas >= MAX_ENTRIES) return oversized(pathOf(open), !top.object).problems[0] as ErrorDetail;
    }
  }
  return null;
}

/** The path of the innermost open container: keys and list indexes, as refusedInputs writes them. */
function pathOf(open: OpenContainer[]): string {
  const parts: string[] = [];
  for (let level = 0; level < open.length - 1; level++) {
    const container = open[level] as OpenContainer;
    if (!container.object) parts.push(String(container.commas));
    else parts.push(container.key ? keyText(container.key) : '');
  }
  return parts.join('.');
}

function keyText(raw: Uint8Array): string {
  const text = Buffer.from(raw).toString('utf8');
  try {
    return JSON.parse(text) as string;
  } catch {
    return text.slice(1, -1);
  }
}

/** The first problem refusedInputs finds, or null. */
export function findRefusedInput(root: unknown): ErrorDetail | null {
  return refusedInputs(root).problems[0] ?? null;
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
  // Every problem at once: the text that cannot be stored, and what the part's own schema
  // says (validation proper would not run after this refusal).
  const query = refusedInputs(request.query);
  const body = refusedInputs(request.body);
  // Every request passes here: nothing more is built unless something was refused.
  if (query.problems.length === 0 && body.problems.length === 0) return undefined;
  const inQuery = query.problems.map((p) => ({ ...p, path: p.path ? `query.${p.path}` : 'query' }));
  const inBody = body.problems.map((p) => ({ ...p, path: p.path || 'body' }));
  // An oversized list or object is refused alone: the schema is not run over it.
  if (query.oversized || body.oversized) return ApiError.validation(query.oversized ? inQuery : inBody);
  const details = [
    ...inQuery,
    ...schemaProblems(request, 'querystring'),
    ...inBody,
    ...schemaProblems(request, 'body'),
  ];
  return ApiError.validation(details.slice(0, MAX_DETAILS));
}

/** What the route's schema of `part` finds wrong with it (none for a part without a schema). */
function schemaProblems(request: FastifyRequest, part: 'querystring' | 'body'): ErrorDetail[] {
  const schema = request.routeOptions.schema?.[part];
  if (!schema) return [];
  const validate = request.getValidationFunction(part);
  const value = part === 'body' ? request.body : request.query;
  if (!validate || validate(value)) return [];
  // Paths echo the client's keys: made printable, as refusedInputs does.
  return detailsFromAjv((validate.errors ?? []) as AjvIssue[], part).map((d) => ({
    ...d,
    path: d.path.replaceAll('\u0000', '').toWellFormed(),
  }));
}
