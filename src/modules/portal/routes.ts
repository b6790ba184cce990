/**
 * The partner portal at /portal: server-rendered like the dashboard, in its own encapsulated
 * plugin with its own cookies (path /portal), CSRF binding, sessions, error pages and the
 * pages' security headers. A partner session gives access to that partner's data only.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.js';
import { enforceRateLimit } from '../../http/auth.js';
import { browserForms } from '../../web/browserForms.js';
import { securityHeaders } from '../../web/securityHeaders.js';
import { accessRoutes, logoutRoute } from './pages/access.js';
import { conversionPages } from './pages/conversions.js';
import { earningsPage } from './pages/earnings.js';
import { offerPages } from './pages/offers.js';
import { overviewPage } from './pages/overview.js';
import { payoutDetailsPage } from './pages/payoutDetails.js';
import { postbackPages } from './pages/postbacks.js';
import { portalErrorHandler, sendPortalError } from './respond.js';
import { PORTAL_CSRF_COOKIE, PORTAL_PATH, partnerSessionOf, portalCsrfUserInfo, requirePartnerSession } from './web.js';

export function portalRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(
      async (scope) => {
        const portal = scope.withTypeProvider<TypeBoxTypeProvider>();
        portal.addHook('onRoute', (route) => {
          route.schema = { ...route.schema, hide: true };
        });
        await securityHeaders(portal);
        await browserForms(portal, {
          path: PORTAL_PATH,
          secure: ctx.config.publicUrl.startsWith('https:'),
          csrfCookie: PORTAL_CSRF_COOKIE,
          userInfo: portalCsrfUserInfo,
        });
        portal.addHook('onRequest', async (_request, reply) => {
          reply.header('cache-control', 'no-store');
        });
        portal.setErrorHandler(portalErrorHandler);
        portal.setNotFoundHandler((request, reply) =>
          sendPortalError(reply, request, 404, 'There is no page at this address.'),
        );
        accessRoutes(portal, ctx);

        await portal.register(async (inner) => {
          const signedIn = inner.withTypeProvider<TypeBoxTypeProvider>();
          signedIn.addHook('onRequest', requirePartnerSession(ctx));
          // Every signed-in page counts against the partner's per-minute limit, like an API key.
          signedIn.addHook('onRequest', async (request, reply) => {
            if (!request.partnerSession) return;
            const { partner } = partnerSessionOf(request);
            await enforceRateLimit(ctx, request, reply, `portal:${partner.id}`, ctx.config.rateLimitPerMinute);
          });
          logoutRoute(signedIn, ctx);
          overviewPage(signedIn, ctx);
          offerPages(signedIn, ctx);
          conversionPages(signedIn, ctx);
          earningsPage(signedIn, ctx);
          postbackPages(signedIn, ctx);
          payoutDetailsPage(signedIn, ctx);
        });
      },
      { prefix: PORTAL_PATH },
    );
  };
}
