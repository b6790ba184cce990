import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { acceptsHtml } from '../../http/accept.js';
import { logFailure, sendError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { ErrorBody, errorResponses, IdField, KEYED_ERRORS, ListOf, Resource } from '../../http/schemas.js';
import { sendPage } from '../../web/page.js';
import { allPages, CSV_LIST_RULES, JsonOrCsv, refuseCsvLimit, sendCsv, wantsCsv } from '../analytics/csv.js';
import { checkIdFilters } from '../idFilters.js';
import { eraseClicks } from './erase.js';
import { LinkNotActivePage, LinkUnavailablePage } from './linkNotActivePage.js';
import { clickToApi, listClicks } from './repository.js';
import { Click, ListClicksQuery, TrackingQuery } from './schemas.js';
import { trackClick } from './service.js';

/** Rendered once: the page has no variable parts. */
const NOT_ACTIVE_PAGE = LinkNotActivePage();

/** Longest sub value kept, in characters (code points); longer ones are cut rather than refused. */
const MAX_SUB_LENGTH = 255;
const MAX_HEADER_LENGTH = 1024;

/**
 * First value, made storable alike on both databases (see http/inputText.ts) — NUL
 * characters dropped, lone surrogates replaced by U+FFFD — and cut to `max` code points, so
 * a cut never splits a surrogate pair (which would make `encodeURIComponent` throw).
 */
function clean(value: unknown, max: number): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  if (typeof first !== 'string') return null;
  const text = cutToCodePoints(first.replaceAll('\u0000', '').toWellFormed(), max);
  return text === '' ? null : text;
}

function cutToCodePoints(text: string, max: number): string {
  // Fewer UTF-16 units than `max` means fewer code points too: nothing to count.
  if (text.length <= max) return text;
  let units = 0;
  for (let points = 0; points < max && units < text.length; points++) {
    units += (text.codePointAt(units) ?? 0) > 0xffff ? 2 : 1;
  }
  return text.slice(0, units);
}

function subsFromQuery(query: Record<string, unknown>): Array<string | null> {
  return [1, 2, 3, 4, 5].map((n) => clean(query[`sub${n}`], MAX_SUB_LENGTH));
}

/** The public tracking link. */
export function trackingRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/t/:offerId/:partnerId',
      {
        config: { cleansText: true },
        // A HEAD (link previews, crawlers) must not count as a click.
        exposeHeadRoute: false,
        // A visitor whose click could not be recorded gets a page, not the API's JSON.
        errorHandler: (error, request, reply) => {
          const failure = logFailure(request, error);
          if (failure.status < 500 || !acceptsHtml(request.headers.accept)) return sendError(reply, failure);
          reply.headers(failure.headers ?? {}).header('cache-control', 'no-store');
          return sendPage(reply, LinkUnavailablePage({ retry: failure.status === 503 }), failure.status);
        },
        schema: {
          operationId: 'followTrackingLink',
          tags: ['tracking'],
          summary: "Tracking link: records the click and redirects (302) to the offer's URL with macros filled in.",
          params: Type.Object({ offerId: Type.String(), partnerId: Type.String() }),
          querystring: TrackingQuery,
          response: {
            302: {
              description:
                "The click is recorded: on to the offer's URL (or its fallback URL while a cap is reached). A request from this service's own webhook and postback sender (`User-Agent: Affitrack-Webhooks/…`) is redirected to the offer's URL without being recorded (`{click_id}` empty).",
              headers: { Location: Type.String({ description: 'Where to go.' }) },
              content: { 'text/html': { schema: Type.String({ description: 'A link to the same place.' }) } },
            },
            404: {
              description:
                'No such active offer or active partner: a page saying the link is not active (JSON for an id too long to be one).',
              content: { 'text/html': { schema: Type.String() }, 'application/json': { schema: Type.Ref(ErrorBody) } },
            },
            503: {
              description:
                'The click could not be recorded (the database is unavailable): a page asking the visitor to try again in a moment, with `Retry-After`. No redirect without a recorded click.',
              content: {
                'text/html': { schema: Type.String() },
                'application/json': {
                  schema: Type.Ref(ErrorBody, { description: 'For a client that accepts JSON and not HTML.' }),
                },
              },
            },
          },
        },
      },
      async (request, reply) => {
        const outcome = await trackClick(ctx, {
          offerId: request.params.offerId,
          partnerId: request.params.partnerId,
          ip: request.ip,
          socketIp: request.socket.remoteAddress ?? '',
          userAgent: clean(request.headers['user-agent'], MAX_HEADER_LENGTH),
          referer: clean(request.headers.referer, MAX_HEADER_LENGTH),
          subs: subsFromQuery(request.query as Record<string, unknown>),
        });
        reply.header('cache-control', 'no-store');
        if (!outcome.found) return sendPage(reply, NOT_ACTIVE_PAGE, 404);
        return reply
          .code(302)
          .header('location', outcome.location)
          .type('text/html; charset=utf-8')
          .send(`<a href="${escapeHtml(outcome.location)}">Continue</a>`);
      },
    );
  };
}

const EraseClicksBody = Type.Object(
  {
    clickId: Type.Optional(IdField('One click (clk_…) of the brand.')),
    ip: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'Every click of the brand from this IP address, as GET /clicks shows it.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Exactly one of clickId or ip.' },
);
const EraseClicksResult = Resource('EraseClicksResult', {
  erased: Type.Integer({ description: 'Clicks whose IP, user agent and referrer were blanked now.' }),
});

export function clickRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/clicks/erase',
      {
        schema: {
          operationId: 'eraseClicks',
          tags: ['clicks'],
          summary:
            "Erase a visitor's personal data: blanks the IP address, user agent and referrer of one click or of every click from an IP, keeping the clicks and every count.",
          security: [{ bearerAuth: [] }],
          body: EraseClicksBody,
          response: { 200: EraseClicksResult, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request) => ({ erased: await eraseClicks(ctx, request.auth.brandId, request.body) }),
    );

    app.get(
      '/clicks',
      {
        schema: {
          operationId: 'listClicks',
          tags: ['clicks'],
          summary:
            'List clicks, newest first, with their fraud score, signals and enrichment; `?format=csv` (or `Accept: text/csv`) streams every matching click as CSV.',
          description: CSV_LIST_RULES,
          security: [{ bearerAuth: [] }],
          querystring: ListClicksQuery,
          response: { 200: JsonOrCsv(ListOf(Click)), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request, reply) => {
        const { format, ...filters } = request.query;
        await checkIdFilters(ctx.db.read, request.auth.brandId, filters);
        if (wantsCsv(request, format)) {
          refuseCsvLimit(request);
          const page = (cursor: string | undefined, limit: number) =>
            listClicks(ctx.db.read, request.auth.brandId, { ...filters, cursor, limit });
          return sendCsv(reply, 'clicks', Object.keys(Click.properties), allPages(page, clickToApi, filters.cursor));
        }
        const limit = pageSize(filters.limit);
        return toPage(await listClicks(ctx.db.read, request.auth.brandId, { ...filters, limit }), limit, clickToApi);
      },
    );
  };
}
