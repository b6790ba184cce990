import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { schemaProblems } from '../../http/errors.js';
import { errorResponses, KEYED_ERRORS } from '../../http/schemas.js';
import { fromArray, JsonOrCsv, sendCsv, wantsCsv } from '../analytics/csv.js';
import { idFilterProblems } from '../idFilters.js';
import { Report, ReportQuery } from './schemas.js';
import { buildReport, reportColumns } from './service.js';

export function reportRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/reports',
      {
        // The schema's problems are answered with the report's own (groupBy, days, filters): one 422 lists all.
        attachValidation: true,
        schema: {
          operationId: 'getReport',
          tags: ['reports'],
          summary:
            'Aggregated metrics over a brand-local date range, filtered and grouped by up to three dimensions, split by currency; `?format=csv` (or `Accept: text/csv`) answers the rows as CSV.',
          security: [{ bearerAuth: [] }],
          querystring: ReportQuery,
          response: { 200: JsonOrCsv(Report), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request, reply) => {
        const { brandId } = request.auth;
        const refused = schemaProblems(request);
        // An id filter the schema refused (empty, too long) is not looked up again.
        const unchecked = (name: string) => !refused.some((p) => p.path === `query.${name}`);
        const { offerId, partnerId } = request.query;
        const ids = {
          offerId: unchecked('offerId') ? offerId : undefined,
          partnerId: unchecked('partnerId') ? partnerId : undefined,
        };
        const unknownIds = await idFilterProblems(ctx.db.read, brandId, ids);
        const report = await buildReport(ctx, brandId, request.query, [...refused, ...unknownIds]);
        if (!wantsCsv(request, request.query.format)) return report;
        return sendCsv(reply, `report-${report.from}-to-${report.to}`, reportColumns(report), fromArray(report.data));
      },
    );
  };
}
