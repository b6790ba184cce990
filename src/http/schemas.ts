/** Schemas shared by every feature: errors, lists and pagination. */
import {
  Kind,
  type ObjectOptions,
  type SchemaOptions,
  type Static,
  type TObject,
  type TProperties,
  type TSchema,
  type TUnsafe,
  Type,
} from '@sinclair/typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable code, e.g. validation_error.' }),
        message: Type.String(),
        details: Type.Optional(
          Type.Array(
            Type.Object(
              { path: Type.String(), message: Type.String() },
              { additionalProperties: false, description: 'One problem: the field and what is allowed there.' },
            ),
          ),
        ),
        requestId: Type.String({
          description: 'The same as the X-Request-Id response header: quote it when reporting a problem.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false },
);

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] });
const PRIMITIVE_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

/**
 * `schema` or null. A primitive schema becomes one schema with a JSON-schema type array
 * (`type: ['string', 'null']`, OpenAPI 3.1), which fast-json-stringify writes directly: for
 * an `anyOf` it validates every value against each branch with Ajv to choose one (a
 * 10,000-row report with two nullable columns: 33 ms to serialise instead of 6).
 */
export function Nullable<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T> | null> {
  if (typeof schema.type === 'string' && PRIMITIVE_TYPES.has(schema.type)) {
    // A plain JSON schema: TypeBox's kind marker would make TypeBox read it as non-null.
    const { [Kind]: _kind, ...json } = schema;
    return Type.Unsafe<Static<T> | null>({ ...json, ...options, type: [schema.type, 'null'] });
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()], options));
}

export const NullableTimestamp = Nullable(Timestamp);

/** The longest id a body or a filter may name: a prefix and a ULID are 30 characters; room for ids of a later kind. */
export const MAX_ID_LENGTH = 64;

/**
 * The id of another resource named in a body (`offerId`, `partnerId`, `clickId`): never
 * empty. `""` is no id, and taking it as "none" would turn a client's blank variable into
 * "every partner" (a payout run) or a postback bound to no offer that never fires; an id
 * that names nothing of the brand is 422 as well, by the service that looks it up.
 */
export function IdField(description?: string) {
  return Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, ...(description ? { description } : {}) });
}

/**
 * A list's or report's filter by the id of an offer or a partner. One rule on every list:
 * an empty value is 422 like the reports' other filters (leave it out to match everything),
 * and an id the brand does not have (unknown, another brand's, another kind's) is 422
 * naming the parameter, not an empty list (see modules/idFilters.ts).
 */
export function IdFilter(kind: 'offer' | 'partner') {
  return Type.Optional(
    IdField(
      `Only this ${kind}'s items. An id that is no ${kind} of the brand is 422 (\`no ${kind} with this id\`), not an empty answer; so is an empty value (leave the parameter out to match every ${kind}).`,
    ),
  );
}

/**
 * A name or other label a person reads: 1 to `maxLength` characters, not only white space
 * (`" "` would show as an empty cell wherever it is listed). The pattern is read by
 * validationErrors.ts, which words it "must not be blank".
 */
export const NOT_BLANK = '\\S';
export function Label(maxLength: number, options: SchemaOptions = {}) {
  return Type.String({ maxLength, pattern: NOT_BLANK, ...options });
}

/**
 * `limit` and `cursor` of a list whose items have ids starting `prefix_`. A cursor is the id
 * of the last item of a page (http/pagination.ts): that prefix and a ULID, so a cursor of
 * another list (a conversion's id on the offers list) is 422 invalid_cursor too.
 */
export function pageQuery(prefix: string) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(
      Type.String({
        pattern: `^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`,
        description:
          "nextCursor of the previous page, as given: the id of that page's last item. A value that is not an id " +
          "of this list's kind is 422 invalid_cursor; any id of this kind is taken as a position (not looked up).",
      }),
    ),
  };
}

/**
 * A resource or other body the API answers with: a component of the OpenAPI document under
 * `name` (clients generated from it get a type of that name), and closed
 * (`additionalProperties: false`), so the document says exactly which fields come back and a
 * client validating against it notices when that changes.
 */
export function Resource<T extends TProperties>(name: string, properties: T, options: ObjectOptions = {}): TObject<T> {
  return Type.Object(properties, { ...options, $id: name, additionalProperties: false });
}

const lists = new Map<string, TSchema>();

/** A page of a named resource: `{ data, nextCursor }`, named `<Item>List`. */
export function ListOf<T extends TSchema>(item: T) {
  if (!item.$id) throw new Error('ListOf: the item schema needs a name (Resource(name, …))');
  const name = `${item.$id}List`;
  const list = Resource(name, {
    data: Type.Array(item),
    nextCursor: Nullable(Type.String(), {
      description: 'Pass as ?cursor= for the next page; null on the last page.',
    }),
  });
  // One schema object per name: two routes listing the same resource share it.
  const known = lists.get(name) as typeof list | undefined;
  if (known) return known;
  lists.set(name, list);
  return list;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'bad_request or invalid_json: the URL is not validly encoded, or the body is not valid JSON.',
  401: 'unauthorized: the key is missing, malformed, unknown or revoked.',
  404: 'not_found: no such resource, or one owned by another brand.',
  409: 'conflict: the change is not allowed from the current state; or idempotency_key_in_use.',
  413: 'payload_too_large: the body is over the size limit.',
  415: 'unsupported_media_type: send bodies as application/json in UTF-8, uncompressed (no Content-Encoding).',
  422: 'validation_error (every problem in error.details), invalid_cursor, or idempotency_key_reused.',
  429: 'rate_limit_exceeded: wait Retry-After seconds.',
  503: 'service_unavailable: the database is unreachable or its disk full, the DNS resolver failed checking a webhook or postback URL, or the server is restarting; retry after Retry-After seconds.',
};

/** Error responses for a route's OpenAPI description (http/openapi.ts adds those every route of its shape has). */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(
    statuses.map((status) => [status, { ...Type.Ref(ErrorBody), description: ERROR_DESCRIPTIONS[status] ?? 'Error.' }]),
  );
}

/** The errors every keyed route can answer with. */
export const KEYED_ERRORS = [401, 429] as const;
