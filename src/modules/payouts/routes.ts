import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/database.js';
import { acceptsCsvOverJson } from '../../http/accept.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf } from '../../http/schemas.js';
import { checkIdFilters } from '../idFilters.js';
import { findPartner } from '../partners/repository.js';
import { payoutCsv } from './csv.js';
import { findPayout, listPayouts, partnerBalances, payoutConversions, payoutToApi } from './repository.js';
import {
  Balances,
  CreatePayoutsBody,
  ListPayoutsQuery,
  MarkPaidBody,
  Payout,
  PayoutDetail,
  Preview,
  PreviewQuery,
  RunResult,
} from './schemas.js';
import { cancelPayout, createRun, markPayoutPaid, previewRun, type RunOutcome } from './service.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const security = [{ bearerAuth: [] }];
const tags = ['payouts'];

function runToApi(outcome: RunOutcome): RunResult {
  return {
    upTo: toIso(outcome.upTo),
    partnerId: outcome.partnerId,
    minimumCents: outcome.minimumCents,
    data: outcome.payouts.map(payoutToApi),
  };
}

/**
 * A payout with its conversions (none once cancelled) and the payout details it is paid to:
 * the partner's when the payout was created, whatever the partner entered since.
 */
export async function payoutDetail(q: Queryable, brandId: string, id: string): Promise<PayoutDetail | null> {
  const row = await findPayout(q, brandId, id);
  if (!row) return null;
  const [partner, items] = await Promise.all([findPartner(q, brandId, row.partner_id), payoutConversions(q, row.id)]);
  return {
    ...payoutToApi(row),
    partnerName: partner?.name ?? '',
    payoutMethod: row.paid_method,
    payoutAccount: row.paid_account,
    conversions: items.map((i) => ({
      conversionId: i.id,
      offerId: i.offer_id,
      amountCents: i.amount_cents,
      approvedAt: toIsoOrNull(i.approved_at),
      createdAt: toIso(i.created_at),
      externalTxnId: i.external_txn_id,
    })),
  };
}

export function payoutRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/payouts',
      {
        schema: {
          operationId: 'createPayouts',
          tags,
          summary:
            'Create a payout run: one payout per partner and currency for conversions approved up to upTo (fires payout.created). 201 when created; a repeat with the same upTo (and partnerId) returns the same run with 200.',
          security,
          body: CreatePayoutsBody,
          response: { 200: RunResult, 201: RunResult, ...errorResponses(...KEYED_ERRORS, 400, 409, 422) },
        },
      },
      async (request, reply) => {
        const outcome = await createRun(ctx, request.auth.brandId, request.body);
        return reply.code(outcome.created ? 201 : 200).send(runToApi(outcome));
      },
    );

    app.get(
      '/payouts/preview',
      {
        schema: {
          operationId: 'previewPayouts',
          tags,
          summary:
            'What POST /payouts would pay now, per partner and currency, without creating anything. 409, as the POST, when a run with this upTo (and partnerId) exists with another minimumCents.',
          security,
          querystring: PreviewQuery,
          response: { 200: Preview, ...errorResponses(...KEYED_ERRORS, 409, 422) },
        },
      },
      async (request) => previewRun(ctx, request.auth.brandId, request.query),
    );

    app.get(
      '/payouts',
      {
        schema: {
          operationId: 'listPayouts',
          tags,
          summary: 'List payouts, newest first.',
          security,
          querystring: ListPayoutsQuery,
          response: { 200: ListOf(Payout), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const { brandId } = request.auth;
        const { partnerId, currency } = request.query;
        // As on every list filtered by id: a partner the brand does not have is a mistake, not an empty list.
        await checkIdFilters(ctx.db.read, brandId, { partnerId });
        const limit = pageSize(request.query.limit);
        // Codes are accepted in any case and stored upper case: `eur` must find EUR payouts.
        const filter = { ...request.query, currency: currency?.toUpperCase(), limit };
        const rows = await listPayouts(ctx.db.read, brandId, filter);
        return toPage(rows, limit, payoutToApi);
      },
    );

    app.get(
      '/payouts/:id',
      {
        schema: {
          operationId: 'getPayout',
          tags,
          summary:
            'One payout with its conversions and the partner’s payout details. With `Accept: text/csv`: one CSV line per conversion.',
          security,
          params: IdParams,
          response: {
            200: {
              description: 'The payout (JSON), or CSV when asked for with Accept: text/csv.',
              content: {
                'application/json': { schema: PayoutDetail },
                'text/csv': { schema: Type.String() },
              },
            },
            ...errorResponses(...KEYED_ERRORS, 404),
          },
        },
      },
      async (request, reply) => {
        const detail = await payoutDetail(ctx.db.read, request.auth.brandId, request.params.id);
        if (!detail) throw ApiError.notFound('Payout');
        if (acceptsCsvOverJson(request.headers.accept)) {
          return reply
            .type('text/csv; charset=utf-8')
            .header('content-disposition', `attachment; filename="${detail.id}.csv"`)
            .serializer((payload: string) => payload)
            .send(payoutCsv(detail));
        }
        return reply.type('application/json; charset=utf-8').send(detail);
      },
    );

    app.post(
      '/payouts/:id/mark-paid',
      {
        schema: {
          operationId: 'markPayoutPaid',
          tags,
          summary: 'Mark a created payout paid, with an optional payment reference (fires payout.paid).',
          security,
          params: IdParams,
          body: Type.Optional(MarkPaidBody),
          response: { 200: Payout, ...errorResponses(...KEYED_ERRORS, 404, 409, 422) },
        },
      },
      async (request) =>
        payoutToApi(
          await markPayoutPaid(ctx, request.auth.brandId, request.params.id, request.body?.reference ?? null),
        ),
    );

    app.post(
      '/payouts/:id/cancel',
      {
        schema: {
          operationId: 'cancelPayout',
          tags,
          summary: 'Cancel a created payout (fires payout.cancelled): its conversions become payable again.',
          security,
          params: IdParams,
          response: { 200: Payout, ...errorResponses(...KEYED_ERRORS, 404, 409) },
        },
      },
      async (request) => payoutToApi(await cancelPayout(ctx, request.auth.brandId, request.params.id)),
    );

    app.get(
      '/partners/:id/balances',
      {
        schema: {
          operationId: 'getPartnerBalances',
          tags,
          summary:
            "The partner's ledger per currency: pending, payable (approved, in no payout), in a created payout, paid.",
          security,
          params: IdParams,
          response: { 200: Balances, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const partner = await findPartner(ctx.db.read, request.auth.brandId, request.params.id);
        if (!partner) throw ApiError.notFound('Partner');
        const rows = await partnerBalances(ctx.db.read, request.auth.brandId, [partner.id]);
        return { partnerId: partner.id, data: rows.map(({ partnerId: _, ...balance }) => balance) };
      },
    );
  };
}
