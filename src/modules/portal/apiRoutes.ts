/** The brand's API for portal access: `POST /partners/:id/invite`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { errorResponses, KEYED_ERRORS, Resource, Timestamp } from '../../http/schemas.js';
import { createInvite } from './invites.js';

export const InviteResponse = Resource('PortalInvite', {
  partnerId: Type.String(),
  url: Type.String({
    description:
      'One-time link to the partner portal where the partner sets a password (or resets it). Send it to the partner; it is shown only here.',
  }),
  expiresAt: Timestamp,
});

export function portalApiRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/partners/:id/invite',
      {
        schema: {
          operationId: 'invitePartner',
          tags: ['partners'],
          summary:
            'Invite an active partner to the partner portal: a one-time link valid 7 days. A new invite replaces unused ones and is also how a partner resets a password.',
          security: [{ bearerAuth: [] }],
          params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
          response: { 201: InviteResponse, ...errorResponses(...KEYED_ERRORS, 404, 409) },
        },
      },
      async (request, reply) => {
        const invite = await createInvite(ctx, request.auth.brandId, request.params.id);
        return reply.code(201).send({ ...invite, expiresAt: toIso(invite.expiresAt) });
      },
    );
  };
}
