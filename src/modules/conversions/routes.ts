import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { isRealDay } from '../../calendar.js';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { allPages, sendCsv, wantsCsv } from '../analytics/csv.js';
import { conversionToApi, findConversion, listConversions } from './repository.js';
import { Conversion, CreateConversionBody, ListConversionsQuery, RejectBody } from './schemas.js';
import { approveConversion, recordConversion, rejectConversion } from './service.js';

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `2026-11-21` (a UTC day; as `to` it means the end of that day) or an ISO 8601 timestamp
 * with a zone (`Z` or an offset: a zoneless time would depend on the server's zone).
 */
function parseInstant(text: string, edge: 'from' | 'to'): number {
  const timestamp = TIMESTAMP.exec(text);
  const day = timestamp ? timestamp[1] : text;
  const ms = timestamp ? Date.parse(text) : Date.parse(`${text}T00:00:00.000Z`);
  if (!day || !isRealDay(day) || Number.isNaN(ms)) {
    throw ApiError.validation([
      { path: `query.${edge}`, message: 'must be a date (YYYY-MM-DD) or an ISO 8601 timestamp with a zone' },
    ]);
  }
  return !timestamp && edge === 'to' ? ms + MS_PER_DAY - 1 : ms;
}

const MS_PER_DAY = 86_400_000;

/** The range of `?from=&to=`; a reversed one is refused like the reports' (not answered empty). */
function parseRange(from: string | undefined, to: string | undefined): { fromMs?: number; toMs?: number } {
  const fromMs = from === undefined ? undefined : parseInstant(from, 'from');
  const toMs = to === undefined ? undefined : parseInstant(to, 'to');
  if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) {
    throw ApiError.validation([{ path: 'query.from', message: 'must not be after to' }]);
  }
  return { fromMs, toMs };
}

export function conversionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/conversions',
      {
        schema: {
          tags: ['conversions'],
          summary:
            'Record a conversion (server-side postback). 201 when new; 200 with the existing one for a repeated externalTxnId.',
          security,
          body: CreateConversionBody,
          response: { 200: Conversion, 201: Conversion, ...errorResponses(...KEYED_ERRORS, 400, 422) },
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
          tags: ['conversions'],
          summary:
            'List conversions, newest first, with filters; `?format=csv` (or `Accept: text/csv`) streams every matching conversion as CSV.',
          security,
          querystring: ListConversionsQuery,
          response: { 200: ListOf(Conversion), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request, reply) => {
        const { format, ...q } = request.query;
        const range = parseRange(q.from, q.to);
        if (wantsCsv(request, format)) {
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
