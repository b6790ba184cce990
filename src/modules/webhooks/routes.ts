import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf, pageQuery, Resource } from '../../http/schemas.js';
import { deliveryToApi, listDeliveries } from '../deliveries/repository.js';
import { deliveryLogRoutes } from '../deliveries/routes.js';
import { Delivery, DeliveryWithAttempts, ListDeliveriesQuery } from '../deliveries/schemas.js';
import { EventName } from '../events/apiSchemas.js';
import { eventCatalogue } from './catalogue.js';
import { healthOf } from './health.js';
import { findSubscription, listSubscriptions, type SubscriptionRow, subscriptionToApi } from './repository.js';
import {
  CreateSubscriptionBody,
  RecoverBody,
  RecoveryResult,
  RotatedSecret,
  RotateSecretBody,
  Subscription,
  UpdateSubscriptionBody,
} from './schemas.js';
import {
  createSubscription,
  deleteSubscription,
  MAX_SUBSCRIPTIONS_PER_BRAND,
  recoverDeliveries,
  rotateSecret,
  updateSubscription,
} from './service.js';
import { sendTestWebhook } from './testSend.js';

const TestSendBody = Type.Object({ event: EventName }, { additionalProperties: false });

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];
const tags = ['webhooks'];

/** Routes that take an API key (mounted under /api/public behind the key hook). */
export function webhookRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  /** Subscriptions as the API shows them, each with its health (two queries for the lot). */
  const present = async (rows: SubscriptionRow[]) => {
    const health = await healthOf(ctx.db.read, rows, ctx.clock.now(), ctx.config.webhookDisableAfter);
    return rows.map((row) => subscriptionToApi(row, health.get(row.id) as Subscription['health']));
  };
  const presentOne = async (row: SubscriptionRow) => (await present([row]))[0] as Subscription;

  return async (app) => {
    app.post(
      '/webhooks',
      {
        schema: {
          operationId: 'createWebhookSubscription',
          tags,
          summary: 'Subscribe a URL to events of the calling key’s brand.',
          description: `A brand has at most ${MAX_SUBSCRIPTIONS_PER_BRAND} subscriptions (disabled ones count); one more is 422 with the detail path \`webhooks\` (delete one first).`,
          security,
          body: CreateSubscriptionBody,
          response: { 201: Subscription, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await presentOne(await createSubscription(ctx, request.auth.brandId, request.body))),
    );

    app.get(
      '/webhooks',
      {
        schema: {
          operationId: 'listWebhookSubscriptions',
          tags,
          summary: 'List subscriptions, newest first.',
          security,
          querystring: Type.Object(pageQuery('sub'), { additionalProperties: false }),
          response: { 200: ListOf(Subscription), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await listSubscriptions(ctx.db.read, request.auth.brandId, { ...request.query, limit });
        const page = toPage(rows, limit, (row) => row);
        return { data: await present(page.data), nextCursor: page.nextCursor };
      },
    );

    app.get(
      '/webhooks/:id',
      {
        schema: {
          operationId: 'getWebhookSubscription',
          tags,
          summary: 'One subscription.',
          security,
          params: IdParams,
          response: { 200: Subscription, ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request) => {
        const row = await findSubscription(ctx.db.read, request.auth.brandId, request.params.id);
        if (!row) throw ApiError.notFound('Subscription');
        return presentOne(row);
      },
    );

    app.patch(
      '/webhooks/:id',
      {
        schema: {
          operationId: 'updateWebhookSubscription',
          tags,
          summary:
            'Change url, events, secret (null removes it), rateLimitPerSecond, or status: disabled parks new ' +
            'deliveries; enabled (or active) sends the parked ones in order, throttled, unless discardParked is true.',
          security,
          params: IdParams,
          body: UpdateSubscriptionBody,
          response: { 200: Subscription, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request) =>
        presentOne(await updateSubscription(ctx, request.auth.brandId, request.params.id, request.body ?? {})),
    );

    app.post(
      '/webhooks/:id/rotate-secret',
      {
        schema: {
          operationId: 'rotateWebhookSecret',
          tags,
          summary:
            'Rotate the signing secret without downtime: the new secret (generated unless given) is shown once; ' +
            'until previousSecretExpiresIn seconds have passed (default 24 h) every delivery carries both ' +
            'signatures, t=…,v1=<new>,v1=<old>. A secret an earlier rotation promised for longer keeps signing ' +
            'until then too (a third v1); at most 3 secrets sign at once, and a rotation that would need a ' +
            'fourth is 409 (wait for the earliest expiry, rotate with previousSecretExpiresIn 0, or PATCH secret).',
          security,
          params: IdParams,
          body: RotateSecretBody,
          response: { 200: RotatedSecret, ...errorResponses(...KEYED_ERRORS, 400, 404, 409, 422) },
        },
      },
      async (request) => {
        const rotated = await rotateSecret(ctx, request.auth.brandId, request.params.id, request.body ?? {});
        return {
          subscription: await presentOne(rotated.row),
          secret: rotated.secret,
          previousSecretExpiresAt: toIsoOrNull(rotated.previousSecretExpiresAt),
        };
      },
    );

    app.post(
      '/webhooks/:id/recover',
      {
        schema: {
          operationId: 'recoverWebhookDeliveries',
          tags,
          summary:
            'Resend every failed delivery of the subscription created in [since, until): each gets a new attempt ' +
            'sequence with the same wh_/evt_ ids and body, sent in order of creation, throttled. dryRun only counts.',
          security,
          params: IdParams,
          body: RecoverBody,
          response: { 200: RecoveryResult, ...errorResponses(...KEYED_ERRORS, 400, 404, 409, 422) },
        },
      },
      async (request) => {
        const result = await recoverDeliveries(ctx, request.auth.brandId, request.params.id, request.body);
        return {
          subscriptionId: request.params.id,
          since: toIso(result.since),
          until: toIso(result.until),
          dryRun: result.dryRun,
          deliveries: result.deliveries,
        };
      },
    );

    app.delete(
      '/webhooks/:id',
      {
        schema: {
          operationId: 'deleteWebhookSubscription',
          tags,
          summary: 'Delete a subscription; its delivery log stays readable (soft delete) until retention removes it.',
          security,
          params: IdParams,
          response: { 204: Type.Null(), ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request, reply) => {
        await deleteSubscription(ctx, request.auth.brandId, request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/webhooks/:id/deliveries',
      {
        schema: {
          operationId: 'listWebhookSubscriptionDeliveries',
          tags,
          summary: 'Delivery log of one subscription (a deleted one too), newest first.',
          security,
          params: IdParams,
          querystring: ListDeliveriesQuery,
          response: { 200: ListOf(Delivery), ...errorResponses(...KEYED_ERRORS, 404, 422) },
        },
      },
      async (request) => {
        const subscription = await findSubscription(ctx.db.read, request.auth.brandId, request.params.id, {
          includeDeleted: true,
        });
        if (!subscription) throw ApiError.notFound('Subscription');
        const limit = pageSize(request.query.limit);
        const rows = await listDeliveries(ctx.db.read, request.auth.brandId, {
          ...request.query,
          subscriptionId: subscription.id,
          limit,
        });
        return toPage(rows, limit, deliveryToApi);
      },
    );

    app.post(
      '/webhooks/:id/test',
      {
        schema: {
          operationId: 'testWebhookSubscription',
          tags,
          summary:
            'Send the catalogue’s example of an event to the subscription now (at its next send slot when it has a ' +
            'rateLimitPerSecond), signed, once; answers the attempt ' +
            '(recorded in the log as a test delivery).',
          security,
          params: IdParams,
          body: TestSendBody,
          response: { 200: DeliveryWithAttempts, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request) => sendTestWebhook(ctx, request.auth.brandId, request.params.id, request.body.event),
    );

    // The brand's whole delivery log (webhooks and postback sends) under the same prefix and key.
    await app.register(deliveryLogRoutes(ctx));
  };
}

/** The public event catalogue (no key). */
export function webhookCatalogueRoutes(): FastifyPluginAsyncTypebox {
  const catalogue = eventCatalogue();
  return async (app) => {
    app.get(
      '/api/public/webhook-events',
      {
        schema: {
          operationId: 'listWebhookEvents',
          tags,
          summary: 'Every webhook event with its description, the JSON Schema of its data, and an example delivery.',
          response: {
            200: Resource('WebhookEventCatalogue', {
              data: Type.Array(
                Resource('WebhookEventType', {
                  name: Type.String(),
                  description: Type.String(),
                  schema: Type.Object({}, { additionalProperties: true, description: 'JSON Schema of the data.' }),
                  example: Type.Object({}, { additionalProperties: true, description: 'An example delivery body.' }),
                }),
              ),
            }),
          },
        },
      },
      async () => catalogue,
    );
  };
}
