import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../http/errors.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf, PageQuery, Resource } from '../../http/schemas.js';
import { deliveryToApi, listDeliveries } from '../deliveries/repository.js';
import { deliveryLogRoutes } from '../deliveries/routes.js';
import { Delivery, DeliveryWithAttempts, ListDeliveriesQuery } from '../deliveries/schemas.js';
import { EventName } from '../events/apiSchemas.js';
import { eventCatalogue } from './catalogue.js';
import { findSubscription, listSubscriptions, subscriptionToApi } from './repository.js';
import { CreateSubscriptionBody, Subscription, UpdateSubscriptionBody } from './schemas.js';
import { createSubscription, deleteSubscription, updateSubscription } from './service.js';
import { sendTestWebhook } from './testSend.js';

const TestSendBody = Type.Object({ event: EventName }, { additionalProperties: false });

const IdParams = Type.Object({ id: Type.String() });
const security = [{ bearerAuth: [] }];
const tags = ['webhooks'];

/** Routes that take an API key (mounted under /api/public behind the key hook). */
export function webhookRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/webhooks',
      {
        schema: {
          operationId: 'createWebhookSubscription',
          tags,
          summary: 'Subscribe a URL to events of the calling key’s brand.',
          security,
          body: CreateSubscriptionBody,
          response: { 201: Subscription, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(subscriptionToApi(await createSubscription(ctx, request.auth.brandId, request.body))),
    );

    app.get(
      '/webhooks',
      {
        schema: {
          operationId: 'listWebhookSubscriptions',
          tags,
          summary: 'List subscriptions, newest first.',
          security,
          querystring: Type.Object(PageQuery, { additionalProperties: false }),
          response: { 200: ListOf(Subscription), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        const rows = await listSubscriptions(ctx.db.read, request.auth.brandId, { ...request.query, limit });
        return toPage(rows, limit, subscriptionToApi);
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
        return subscriptionToApi(row);
      },
    );

    app.patch(
      '/webhooks/:id',
      {
        schema: {
          operationId: 'updateWebhookSubscription',
          tags,
          summary: 'Change url, events, secret (null removes it) or status (active|disabled).',
          security,
          params: IdParams,
          body: UpdateSubscriptionBody,
          response: { 200: Subscription, ...errorResponses(...KEYED_ERRORS, 400, 404, 422) },
        },
      },
      async (request) =>
        subscriptionToApi(await updateSubscription(ctx, request.auth.brandId, request.params.id, request.body ?? {})),
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
            'Send the catalogue’s example of an event to the subscription now, signed, once; answers the attempt ' +
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
