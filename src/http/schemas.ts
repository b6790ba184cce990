/** Schemas shared by every feature: errors, lists and pagination. */
import { type TSchema, Type } from '@sinclair/typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Machine-readable code, e.g. validation_error.' }),
      message: Type.String(),
      details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
      requestId: Type.String({
        description: 'The same as the X-Request-Id response header: quote it when reporting a problem.',
      }),
    }),
  },
  { $id: 'Error' },
);

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/** A cursor is the id of the last item of a page (http/pagination.ts): prefix_ + a ULID. */
const CURSOR_PATTERN = '^[a-z]{2,4}_[0-9A-HJKMNP-TV-Z]{26}$';

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(
    Type.String({
      pattern: CURSOR_PATTERN,
      description: 'nextCursor of the previous page, as given; anything else is 422 invalid_cursor.',
    }),
  ),
};

export function ListOf<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) });
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Unparsable JSON body.',
  401: 'API key missing, malformed, unknown or revoked.',
  404: 'Not found, or owned by another brand.',
  409: 'The change is not allowed from the current state.',
  413: 'Body too large.',
  422: 'Validation error; every problem is listed in error.details.',
  429: 'Rate limit exceeded; see Retry-After.',
};

/** Error responses for a route's OpenAPI description. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(
    statuses.map((status) => [status, { ...Type.Ref(ErrorBody), description: ERROR_DESCRIPTIONS[status] ?? 'Error.' }]),
  );
}

/** The errors every keyed route can answer with. */
export const KEYED_ERRORS = [401, 429] as const;
