import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { isInstant, isRealDay } from '../../calendar.js';
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { allPages, CSV_LIST_RULES, JsonOrCsv, refuseCsvLimit, sendCsv, wantsCsv } from '../analytics/csv.js';
import { checkIdFilters } from '../idFilters.js';
import { conversionToApi, findConversion, listConversions } from './repository.js';
import { Conversion, CreateConversionBody, ListConversionsQuery, RejectBody } from './schemas.js';
import { approveConversion, recordConversion, rejectConversion } from './service.js';

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];

type Bound = { day: string } | { ms: number };

/**
 * `2026-11-21` is a day of the brand's time zone, counted like the reports (the
 * conversion's creation day there); an ISO 8601 timestamp with a zone (`Z` or an offset) is
 * an exact instant, for UTC or any other cut-off.
 */
function parseBound(text: string, edge: 'from' | 'to'): Bound {
  if (isInstant(text)) return { ms: Date.parse(text) };
  if (isRealDay(text)) return { day: text };
  throw InvalidError.at(
    `query.${edge}`,
    'must be a date as YYYY-MM-DD (a day of the brand time zone) or an ISO 8601 timestamp with a zone',
  );
}

/** The range of `?from=&to=`; a reversed one is refused like the reports' (not answered empty). */
function parseRange(from: string | undefined, to: string | undefined) {
  const lower = from === undefined ? undefined : parseBound(from, 'from');
  const upper = to === undefined ? undefined : parseBound(to, 'to');
  const reversed =
    lower && upper && 'day' in lower && 'day' in upper
      ? lower.day > upper.day
      : lower && upper && 'ms' in lower && 'ms' in upper && lower.ms > upper.ms;
  if (reversed) throw InvalidError.at('query.from', 'must not be after to');
  return {
    fromDay: lower && 'day' in lower ? lower.day : undefined,
    fromMs: lower && 'ms' in lower ? lower.ms : undefined,
    toDay: upper && 'day' in upper ? upper.day : undefined,
    toMs: upper && 'ms' in upper ? upper.ms : undefined,
  };
}

export function conversionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/conversions',
      {
        schema: {
          operationId: 'recordConversion',
          tags: ['conversions'],
          summary:
            'Record a conversion (server-side postback). 201 when new; 200 with the existing one for a repeated externalTxnId.',
          security,
          body: CreateConversionBody,
          response: { 200: Conversion, 201: Conversion, ...errorResponses(...KEYED_ERRORS, 400, 409, 422) },
        },
      },
      async (request, reply) => {
        const { row, created } = await recordConversion(ctx, request.auth.brandId, request.body);
        return reply.code(created ? 201 : 200).send(conversionToApi(row));
      },
    );

    app.get(
      '/conversions',
      {
        schema: {
          operationId: 'listConversions',
          tags: ['conversions'],
          summary:
            'List conversions, newest first, with filters; `?format=csv` (or `Accept: text/csv`) streams every matching conversion as CSV.',
          description: CSV_LIST_RULES,
          security,
          querystring: ListConversionsQuery,
          response: { 200: JsonOrCsv(ListOf(Conversion)), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request, reply) => {
        const { format, ...q } = request.query;
        const range = parseRange(q.from, q.to);
        await checkIdFilters(ctx.db.read, request.auth.brandId, q);
        if (wantsCsv(request, format)) {
          refuseCsvLimit(request);
          const page = (cursor: string | undefined, limit: number) =>
            listConversions(ctx.db.read, request.auth.brandId, { ...q, ...range, cursor, limit });
          const rows = allPages(page, conversionToApi, q.cursor);
          return sendCsv(reply, 'conversions', Object.keys(Conversion.properties), rows);
        }
        const limit = pageSize(q.limit);
        const rows = await listConversions(ctx.db.read, request.auth.brandId, { ...q, limit, ...range });
        return toPage(rows, limit, conversionToApi);
      },
    );

    app.get(
      '/conversions/:id',
      {
        schema: {
          operationId: 'getConversion',
          tags: ['conversions'],
          summary: 'One conversion.',
          security,
          params: IdParams,
          response: { 200: Conversion, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const row = await findConversion(ctx.db.read, request.auth.brandId, request.params.id);
        if (!row) throw ApiError.notFound('Conversion');
        return conversionToApi(row);
      },
    );

    app.post(
      '/conversions/:id/approve',
      {
        schema: {
          operationId: 'approveConversion',
          tags: ['conversions'],
          summary: 'Approve a pending conversion (fires conversion.approved).',
          security,
          params: IdParams,
          response: { 200: Conversion, ...errorResponses(...KEYED_ERRORS, 404, 409) },
        },
      },
      async (request) => conversionToApi(await approveConversion(ctx, request.auth.brandId, request.params.id)),
    );

    app.post(
      '/conversions/:id/reject',
      {
        schema: {
          operationId: 'rejectConversion',
          tags: ['conversions'],
          summary: 'Reject a pending conversion (fires conversion.rejected).',
          security,
          params: IdParams,
          body: Type.Optional(RejectBody),
          response: { 200: Conversion, ...errorResponses(...KEYED_ERRORS, 404, 409, 422) },
        },
      },
      async (request) =>
        conversionToApi(
          await rejectConversion(ctx, request.auth.brandId, request.params.id, request.body?.reason ?? null),
        ),
    );
  };
}
