/**
 * The partner API: `/api/v1/partner/report`, `/conversions`, `/offers`, authorised by a
 * partner key (`afp_…`) and answering with that partner's own data only.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { bearerToken, enforceRateLimit, type KeyLimit } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf, pageQuery } from '../../http/schemas.js';
import { KEY_PREFIX } from '../apiKeys/service.js';
import { checkIdFilters } from '../idFilters.js';
import {
  PartnerConversion,
  PartnerConversionsQuery,
  PartnerOffer,
  PartnerReport,
  PartnerReportQuery,
  partnerConversions,
  partnerConversionToApi,
  partnerOffers,
  partnerOfferToApi,
  partnerReport,
} from '../portal/partnerData.js';
import { type AuthenticatedPartnerKey, authenticatePartnerKey, PARTNER_KEY_PREFIX } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    partnerAuth: AuthenticatedPartnerKey;
  }
}

export const PARTNER_API_TAG = 'partner API';
const security = [{ partnerKey: [] }];

/** A partner key's limit (the API's per-key limit); null for a token that is no valid partner key. */
export async function partnerKeyLimit(ctx: AppContext, token: string): Promise<KeyLimit | null> {
  const key = await authenticatePartnerKey(ctx, token);
  return key && { counter: `partner-key:${key.keyId}`, limit: ctx.config.rateLimitPerMinute };
}

export function partnerKeyHook(ctx: AppContext) {
  return async function requirePartnerKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = bearerToken(request);
    if (!token) throw ApiError.unauthorized('Send your partner API key as "Authorization: Bearer <key>".');
    const key = await authenticatePartnerKey(ctx, token);
    if (!key) {
      // A brand key here is a mix-up, not a bad key: say which key these routes take (still 401).
      if (token.startsWith(KEY_PREFIX)) {
        throw ApiError.unauthorized(
          `This is a brand API key (${KEY_PREFIX}…); the partner API (/api/v1/partner/*) takes a partner API key (${PARTNER_KEY_PREFIX}…), which a partner creates in the partner portal.`,
        );
      }
      throw ApiError.unauthorized('The partner API key is invalid or has been revoked.');
    }
    request.partnerAuth = key;
    await enforceRateLimit(ctx, request, reply, `partner-key:${key.keyId}`, ctx.config.rateLimitPerMinute);
  };
}

export function partnerApiRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addHook('onRequest', partnerKeyHook(ctx));

    app.get(
      '/report',
      {
        schema: {
          operationId: 'getPartnerReport',
          tags: [PARTNER_API_TAG],
          summary: 'Your clicks, conversions and earnings per day (brand time zone); default the last 30 days.',
          security,
          querystring: PartnerReportQuery,
          response: { 200: PartnerReport, ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => partnerReport(ctx, request.partnerAuth, request.query),
    );

    app.get(
      '/conversions',
      {
        schema: {
          operationId: 'listPartnerConversions',
          tags: [PARTNER_API_TAG],
          summary: 'Your conversions, newest first, with what you earn for each.',
          security,
          querystring: PartnerConversionsQuery,
          response: { 200: ListOf(PartnerConversion), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        // A day not in the calendar or a reversed range is 422, as on the report (partnerConversions).
        const limit = pageSize(request.query.limit);
        await checkIdFilters(ctx.db.read, request.partnerAuth.brandId, { offerId: request.query.offerId });
        const rows = await partnerConversions(ctx.db.read, request.partnerAuth, { ...request.query, limit });
        return toPage(rows, limit, partnerConversionToApi);
      },
    );

    app.get(
      '/offers',
      {
        schema: {
          operationId: 'listPartnerOffers',
          tags: [PARTNER_API_TAG],
          summary: 'Offers open to you, with your payout and tracking link.',
          security,
          querystring: Type.Object(pageQuery('off'), { additionalProperties: false }),
          response: { 200: ListOf(PartnerOffer), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await partnerOffers(ctx.db.read, request.partnerAuth, { cursor: request.query.cursor, limit });
        return toPage(rows, limit, (row) => partnerOfferToApi(ctx, request.partnerAuth, row));
      },
    );
  };
}
