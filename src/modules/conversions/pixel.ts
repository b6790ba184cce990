/**
 * Pixel-style inbound postback — a way of recording conversions — for advertisers who can
 * only fire a URL:
 * `GET /postback?token=…&click_id=…&amount=…&txn_id=…&sub1=…[&pixel=1]`. It records a
 * conversion exactly like `POST /api/v1/conversions` with `clickId` (same dedupe on txn_id,
 * same events, caps and fraud rules). Authorised by the offer's postback token — never an
 * API key in a URL — and rate-limited per token.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { lockRowForUpdate } from '../../db/locks.js';
import { NotFoundError } from '../../errors.js';
import { enforceRateLimit } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import { ErrorBody, errorResponses, KEYED_ERRORS, Resource } from '../../http/schemas.js';
import { currencyDecimals, formatMajorUnits, MAX_AMOUNT_CENTS, parseMajorUnits } from '../../money.js';
import { findClick } from '../clicks/repository.js';
import { isOwnSender } from '../deliveries/userAgent.js';
import { findOffer, type OfferRow } from '../offers/repository.js';
import { isCurrencyCode } from '../validation.js';
import { type AmountNames, recordConversion, relabelledAmountProblems } from './service.js';

const TOKEN_PREFIX = 'pbt_';
const TRANSPARENT_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export function newPostbackToken(): string {
  return TOKEN_PREFIX + randomBytes(24).toString('base64url');
}

const PIXEL_AMOUNTS: AmountNames = { revenueCents: 'query.amount', payoutCents: 'query.payout' };

/** 12.50 written in `currency`'s decimals: 1250 for JPY, 12.500 for BHD. */
function exampleAmount(currency: string): string {
  return formatMajorUnits(1250 * 10 ** Math.max(0, currencyDecimals(currency) - 2), currency);
}

export function pixelUrl(ctx: AppContext, token: string): string {
  return `${ctx.config.publicUrl}/postback?token=${token}&click_id={click_id}&amount={amount}&txn_id={txn_id}`;
}

/** The offer's token, created on first request. */
export async function getPostbackToken(ctx: AppContext, brandId: string, offerId: string): Promise<OfferRow> {
  const offer = await findOffer(ctx.db.read, brandId, offerId);
  if (!offer) throw new NotFoundError('Offer');
  if (offer.postback_token) return offer;
  return rotatePostbackToken(ctx, brandId, offerId, true);
}

/** Replaces the token: the old one is refused from now on. */
export async function rotatePostbackToken(
  ctx: AppContext,
  brandId: string,
  offerId: string,
  onlyIfMissing = false,
): Promise<OfferRow> {
  return ctx.db.transact(async (trx) => {
    // Concurrent first requests must all get the one token that stays, not each its own.
    await lockRowForUpdate(trx, 'offers', offerId);
    const offer = await findOffer(trx, brandId, offerId);
    if (!offer) throw new NotFoundError('Offer');
    if (onlyIfMissing && offer.postback_token) return offer;
    const token = newPostbackToken();
    await trx.updateTable('offers').set({ postback_token: token }).where('id', '=', offer.id).execute();
    return { ...offer, postback_token: token };
  });
}

const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));

const PixelQuery = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 128, description: "The offer's postback token." }),
    click_id: Type.String({ minLength: 1, maxLength: 64 }),
    amount: Type.Optional(
      Type.String({ maxLength: 32, description: "Revenue in major units (12.50); defaults to the offer's." }),
    ),
    payout: Type.Optional(
      Type.String({ maxLength: 32, description: "Payout in major units; defaults to the offer's." }),
    ),
    currency: Type.Optional(Type.String({ minLength: 3, maxLength: 3 })),
    txn_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Dedupe key, as externalTxnId.' })),
    sub1: Text(255),
    sub2: Text(255),
    sub3: Text(255),
    sub4: Text(255),
    sub5: Text(255),
    pixel: Type.Optional(Type.String({ maxLength: 5, description: '1: answer with a 1×1 GIF instead of text.' })),
  },
  { additionalProperties: true },
);

/**
 * Limited per token (hashed: the counter key need not hold the secret itself), counted as the
 * request arrives, as the application form is: every answer then carries RateLimit-* (as the
 * document says), and a stream of malformed postbacks is throttled like any other.
 */
function limitPerToken(ctx: AppContext) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const given = (request.query as Record<string, unknown>).token;
    const token = Array.isArray(given) ? given[0] : given;
    const tokenKey = createHash('sha256')
      .update(typeof token === 'string' ? token : '')
      .digest('base64url');
    return enforceRateLimit(ctx, request, reply, `postback:${tokenKey}`, ctx.config.postbackRateLimitPerMinute);
  };
}

export function pixelPostbackRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/postback',
      {
        // A HEAD from a link checker must not record a conversion, and answering one without
        // recording it would tell the checker a different story than the GET: no HEAD route (404).
        exposeHeadRoute: false,
        onRequest: limitPerToken(ctx),
        config: { takesLegacyEscapes: true, rateLimited: true },
        schema: {
          operationId: 'recordPixelPostback',
          tags: ['postbacks'],
          summary: 'Pixel-style inbound postback: records a conversion for a click (200 text, or a GIF with pixel=1).',
          description:
            'GET only: every GET records (or finds again by txn_id) a conversion, so there is no HEAD route — `HEAD /postback` ' +
            'is 404, and a link checker probing the URL records nothing. Authorised by the offer’s postback token in the ' +
            'query string, never by an API key.',
          querystring: PixelQuery,
          response: {
            200: {
              description: 'Recorded (or found again by txn_id): `OK` as text, or a 1×1 GIF with pixel=1.',
              content: {
                'text/plain': { schema: Type.String() },
                'image/gif': { schema: Type.Unsafe<Buffer>({ type: 'string', format: 'binary' }) },
              },
            },
            401: {
              ...Type.Ref(ErrorBody),
              description:
                'unauthorized: the postback token is not one of any offer (mistyped, or rotated since). No WWW-Authenticate: ' +
                'the token is a query parameter, not an HTTP authentication scheme.',
            },
            ...errorResponses(409, 422, 429),
          },
        },
      },
      async (request, reply) => {
        const q = request.query;
        if (isOwnSender(request.headers['user-agent'])) {
          // A partner postback or webhook pointed at this pixel: each conversion would record the next.
          throw ApiError.validation([
            {
              path: 'header.User-Agent',
              message: "is this service's own sender: a postback cannot record conversions with its own pixel",
            },
          ]);
        }
        const offer = q.token.startsWith(TOKEN_PREFIX)
          ? await ctx.db.read.selectFrom('offers').selectAll().where('postback_token', '=', q.token).executeTakeFirst()
          : undefined;
        if (!offer) throw new ApiError('unauthorized', 'The postback token is invalid or has been rotated.');
        const click = await findClick(ctx.db.read, offer.brand_id, q.click_id);
        if (!click || click.offer_id !== offer.id) {
          throw ApiError.validation([{ path: 'query.click_id', message: 'no click of this offer has this id' }]);
        }
        if (q.currency !== undefined && !isCurrencyCode(q.currency)) {
          throw ApiError.validation([
            { path: 'query.currency', message: 'must be an ISO 4217 currency code such as USD' },
          ]);
        }
        const currency = q.currency ?? offer.currency;
        const amounts: { revenueCents?: number; payoutCents?: number } = {};
        for (const [field, key] of [
          ['amount', 'revenueCents'],
          ['payout', 'payoutCents'],
        ] as const) {
          const text = q[field];
          if (text === undefined || text === '') continue;
          const cents = parseMajorUnits(text, currency);
          if (cents === null || cents > MAX_AMOUNT_CENTS) {
            const message =
              cents === null
                ? `must be an amount in ${currency} such as ${exampleAmount(currency)}`
                : `must be at most ${formatMajorUnits(MAX_AMOUNT_CENTS, currency)}, as on POST /api/v1/conversions`;
            throw ApiError.validation([{ path: `query.${field}`, message }]);
          }
          amounts[key] = cents;
        }
        // As on POST /conversions, named by this route's parameters.
        const relabelled = relabelledAmountProblems(q.currency, offer, amounts, PIXEL_AMOUNTS);
        if (relabelled.length > 0) throw ApiError.validation(relabelled);
        // Whoever sees the pixel's URL (it sits in public pages) could set the partner's pay with it.
        const needsReview = amounts.payoutCents !== undefined;
        await recordConversion(
          ctx,
          offer.brand_id,
          {
            clickId: click.id,
            ...amounts,
            ...(q.currency ? { currency: q.currency } : {}),
            ...(q.txn_id ? { externalTxnId: q.txn_id } : {}),
            ...(q.sub1 ? { sub1: q.sub1 } : {}),
            ...(q.sub2 ? { sub2: q.sub2 } : {}),
            ...(q.sub3 ? { sub3: q.sub3 } : {}),
            ...(q.sub4 ? { sub4: q.sub4 } : {}),
            ...(q.sub5 ? { sub5: q.sub5 } : {}),
          },
          { needsReview },
        );
        reply.header('cache-control', 'no-store');
        if (q.pixel === '1' || q.pixel === 'true') return reply.type('image/gif').send(TRANSPARENT_GIF);
        return reply.type('text/plain; charset=utf-8').send('OK');
      },
    );
  };
}

const PostbackToken = Resource('PostbackToken', {
  offerId: Type.String(),
  token: Type.String(),
  postbackUrl: Type.String({ description: 'Ready-made pixel postback URL with the macros advertisers fill in.' }),
});

/** The offer's pixel token, behind the API key (mounted under /api/v1). */
export function pixelTokenRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const security = [{ bearerAuth: [] }];
    const tags = ['postbacks'];
    const params = Type.Object({ id: Type.String() });
    const response = { 200: PostbackToken, ...errorResponses(...KEYED_ERRORS, 404) };
    const toToken = (offer: { id: string; postback_token: string | null }) => ({
      offerId: offer.id,
      token: offer.postback_token ?? '',
      postbackUrl: pixelUrl(ctx, offer.postback_token ?? ''),
    });
    app.get(
      '/offers/:id/postback-token',
      {
        schema: {
          operationId: 'getPostbackToken',
          tags,
          summary: "The offer's pixel postback token (created on first request).",
          security,
          params,
          response,
        },
      },
      async (request) => toToken(await getPostbackToken(ctx, request.auth.brandId, request.params.id)),
    );
    app.post(
      '/offers/:id/postback-token',
      {
        schema: {
          operationId: 'rotatePostbackToken',
          tags,
          summary: 'Rotate the token: the old one is refused from now on.',
          security,
          params,
          response,
        },
      },
      async (request) => toToken(await rotatePostbackToken(ctx, request.auth.brandId, request.params.id)),
    );
  };
}
