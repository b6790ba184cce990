/**
 * Turns Ajv's errors into the API's `details`: one entry per problem, each with the field's
 * path and a message that names what is allowed. Ajv reports a failed union (TypeBox's
 * `Union` of literals, or `Nullable`) as one error per branch ("must be equal to constant"
 * nine times) plus one for the union; those are folded into a single "must be one of …".
 */
import { NOT_BLANK } from './schemas.js';

/** One entry of a 422's `details` (re-exported by errors.ts, which imports this file). */
export interface ErrorDetail {
  path: string;
  message: string;
}

export interface AjvIssue {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  /** Set on errors of a key checked by `propertyNames` (metadata keys). */
  propertyName?: string;
  /** Present because the validators are compiled with `verbose: true`. */
  parentSchema?: SchemaLike;
  /** The value that failed (also from `verbose: true`). */
  data?: unknown;
}

interface SchemaLike {
  const?: unknown;
  enum?: unknown[];
  anyOf?: SchemaLike[];
  oneOf?: SchemaLike[];
  type?: string | string[];
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  not?: SchemaLike;
}

/** What each format means, in words a client can act on. */
export const FORMAT_TEXT: Record<string, string> = {
  'date-time': 'an ISO 8601 date-time with a zone, such as 2026-11-21T10:00:00.000Z',
  date: 'a date as YYYY-MM-DD',
  email: 'an email address',
  uri: 'an absolute URI',
  'http-url': 'an absolute http(s) URL without control characters',
  'http-url-template': 'an absolute http(s) URL without control characters, with macros in the path and query only',
  currency: 'an ISO 4217 currency code such as USD (any case)',
  'currency-filter': 'a current or withdrawn ISO 4217 currency code such as USD or HRK (any case)',
  'time-zone': 'an IANA time zone such as Europe/Berlin',
  day: 'a date as YYYY-MM-DD',
};

function quote(value: unknown): string {
  return JSON.stringify(value);
}

function range(schema: SchemaLike): string {
  const { minimum, maximum } = schema;
  if (minimum !== undefined && maximum !== undefined) return ` from ${minimum} to ${maximum}`;
  if (minimum !== undefined) return ` of at least ${minimum}`;
  if (maximum !== undefined) return ` of at most ${maximum}`;
  return '';
}

function length(schema: SchemaLike): string {
  const { minLength, maxLength } = schema;
  if (minLength !== undefined && maxLength !== undefined) {
    return minLength === maxLength ? ` of ${minLength} characters` : ` of ${minLength} to ${maxLength} characters`;
  }
  if (maxLength !== undefined) return ` of at most ${maxLength} characters`;
  if (minLength !== undefined) return ` of at least ${minLength} characters`;
  return '';
}

/** A schema in words: `one of "active", "paused"`, `an integer from 1 to 100 or null`. */
export function describeSchema(schema: SchemaLike): string {
  if ('const' in schema) return quote(schema.const);
  if (schema.enum) return `one of ${schema.enum.map(quote).join(', ')}`;
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    const constants = branches.filter((b) => 'const' in b);
    const others = branches.filter((b) => !('const' in b));
    const parts = others.map(describeSchema);
    if (constants.length > 0) parts.unshift(`one of ${constants.map((b) => quote(b.const)).join(', ')}`);
    return parts.join(' or ');
  }
  if (Array.isArray(schema.type)) {
    return schema.type.map((type) => describeSchema({ ...schema, type })).join(' or ');
  }
  switch (schema.type) {
    case 'null':
      return 'null';
    case 'string':
      if (schema.format) return FORMAT_TEXT[schema.format] ?? `a string in ${schema.format} format`;
      return `a string${length(schema)}`;
    case 'integer':
      return `an integer${range(schema)}`;
    case 'number':
      return `a number${range(schema)}`;
    case 'boolean':
      return 'true or false';
    case 'array':
      return 'a list';
    case 'object':
      return 'an object';
    default:
      return 'a valid value';
  }
}

const TYPE_TEXT: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};

function messageOf(issue: AjvIssue): string {
  const { params, parentSchema } = issue;
  // A nullable primitive (`type: ['string', 'null']`, see `Nullable`) fails as one schema:
  // name both of its forms, as for a union.
  if (Array.isArray(parentSchema?.type) && parentSchema.type.includes('null')) {
    return `must be ${describeSchema(parentSchema)}`;
  }
  switch (issue.keyword) {
    case 'anyOf':
    case 'oneOf':
      return parentSchema ? `must be ${describeSchema(parentSchema)}` : 'matches none of the allowed forms';
    case 'enum':
    case 'const':
      return parentSchema ? `must be ${describeSchema(parentSchema)}` : (issue.message ?? 'is not allowed');
    case 'type': {
      const expected = String(params.type)
        .split(',')
        .map((t) => TYPE_TEXT[t] ?? t);
      return `must be ${expected.join(' or ')}`;
    }
    case 'format':
      return `must be ${FORMAT_TEXT[String(params.format)] ?? `in ${String(params.format)} format`}`;
    case 'minLength':
      return `must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long`;
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`;
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minItems':
      return `must list at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must list at most ${String(params.limit)} items`;
    case 'maxProperties':
      return `must have at most ${String(params.limit)} keys`;
    case 'uniqueItems':
      return `must not list the same item twice (items ${String(params.j)} and ${String(params.i)} are equal)`;
    case 'pattern':
      if (params.pattern === NOT_BLANK) return 'must not be blank';
      return `must match the pattern ${String(params.pattern)}`;
    case 'not':
      return parentSchema?.not ? `must not be ${describeSchema(parentSchema.not)}` : 'is not allowed';
    default:
      return issue.message ?? 'is invalid';
  }
}

function fieldOf(instancePath: string): string {
  return instancePath
    .replace(/^\//, '')
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
}

/** The most problems one 422 lists: enough to fix a request, bounded for a hostile one. */
export const MAX_DETAILS = 100;

/**
 * The branch of a failed union that alone has the value's type (an object given to
 * "pairs or null"), whose own errors say what is wrong better than the union's "must be an
 * object or null"; null when no single branch fits (unions of literals, of several types).
 */
function explainingBranch(union: AjvIssue): number | null {
  const branches = union.parentSchema?.anyOf ?? union.parentSchema?.oneOf;
  const data = union.data;
  if (!branches || data === null || typeof data !== 'object') return null;
  const type = Array.isArray(data) ? 'array' : 'object';
  const fitting = branches.flatMap((branch, index) => (branch.type === type ? [index] : []));
  return fitting.length === 1 ? (fitting[0] as number) : null;
}

/**
 * Whether an issue at `schemaPath` is replaced by a failed union's own error: it lies inside
 * the union (`unions`: schema path → explaining branch), outside the branch that explains it.
 */
function insideFailedUnion(schemaPath: string, unions: Map<string, number | null>): boolean {
  for (const match of schemaPath.matchAll(/\/(?:anyOf|oneOf)\//g)) {
    const unionPath = schemaPath.slice(0, match.index + match[0].length - 1);
    if (!unions.has(unionPath)) continue;
    const branch = unions.get(unionPath);
    if (branch === null || !schemaPath.startsWith(`${unionPath}/${branch}/`)) return true;
  }
  return false;
}

/**
 * The issues that say what is wrong: a failed union's branch errors are replaced by the
 * union's own error, or the union by the errors of the one branch that explains it (an
 * object given to "rule or null" is told what is wrong with the rule, not "must be null").
 * The dashboard words the same issues for its forms (`describeIssues`).
 */
export function explainingIssues<T extends AjvIssue>(issues: T[]): T[] {
  const unions = new Map<string, number | null>();
  for (const issue of issues) {
    if (issue.keyword === 'anyOf' || issue.keyword === 'oneOf') unions.set(issue.schemaPath, explainingBranch(issue));
  }
  if (unions.size === 0) return issues;
  return issues.filter((issue) => !insideFailedUnion(issue.schemaPath, unions) && unions.get(issue.schemaPath) == null);
}

/** Ajv's errors of one request part (`body`, `querystring`, `params`) as API details, at most MAX_DETAILS. */
export function detailsFromAjv(issues: AjvIssue[], part: string | undefined): ErrorDetail[] {
  const prefix = part === 'body' || !part ? '' : part === 'querystring' ? 'query' : part;
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const issue of explainingIssues(issues)) {
    if (details.length === MAX_DETAILS) break;
    // A bad key is reported by its own error (with propertyName) and once more in general.
    if (issue.keyword === 'propertyNames') continue;
    let field = fieldOf(issue.instancePath);
    let message: string;
    if (issue.propertyName !== undefined) {
      field = field ? `${field}.${issue.propertyName}` : issue.propertyName;
      message = `key ${messageOf(issue).replace(/ long$/, '')}`;
    } else if (issue.keyword === 'additionalProperties') {
      const extra = String(issue.params.additionalProperty);
      field = field ? `${field}.${extra}` : extra;
      message = 'is not a known field';
    } else if (issue.keyword === 'required') {
      const missing = String(issue.params.missingProperty);
      field = field ? `${field}.${missing}` : missing;
      message = 'is required';
    } else {
      message = messageOf(issue);
    }
    const path = [prefix, field].filter(Boolean).join('.');
    const key = `${path}\n${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path, message });
  }
  return details;
}
