/**
 * The web dashboard at /dashboard: server-rendered pages over the same services as the
 * API. Everything lives in one encapsulated plugin, so its cookies, form bodies, CSRF
 * checks, HTML error pages and security headers apply to the dashboard only.
 */

import compress from '@fastify/compress';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.js';
import { browserForms } from '../../web/browserForms.js';
import { securityHeaders } from '../../web/securityHeaders.js';
import { dashboardAssets } from './assets.js';
import { htmlErrorHandler, sendErrorPage } from './errors.js';
import { analyticsPages } from './pages/analytics.js';
import { apiKeyPages } from './pages/apiKeys.js';
import { blocklistPages } from './pages/blocklist.js';
import { brandSettingsPages } from './pages/brandSettings.js';
import { clickPages } from './pages/clicks.js';
import { conversionPages } from './pages/conversions.js';
import { deliveryPages } from './pages/deliveries.js';
import { loginRoutes, logoutRoute } from './pages/login.js';
import { offerPages } from './pages/offers.js';
import { overviewPages } from './pages/overview.js';
import { partnerPortalPages } from './pages/partnerPortal.js';
import { partnerPages } from './pages/partners.js';
import { payoutPages } from './pages/payouts.js';
import { reportPages } from './pages/reports.js';
import { webhookOperationPages } from './pages/webhookOps.js';
import { webhookPages } from './pages/webhooks.js';
import { CSRF_COOKIE, csrfUserInfo, DASHBOARD_PATH, requireSession } from './session.js';

export function dashboardRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(
      async (scope) => {
        const dashboard = scope.withTypeProvider<TypeBoxTypeProvider>();
        // HTML pages are not part of the API: keep them out of the OpenAPI document.
        dashboard.addHook('onRoute', (route) => {
          route.schema = { ...route.schema, hide: true };
        });
        // Pages, CSS and JS are compressed (they shrink ~5x); registered in this scope only,
        // so API and tracking responses never pay for it.
        await dashboard.register(compress, { threshold: 1024, encodings: ['br', 'gzip'] });
        await securityHeaders(dashboard);
        await browserForms(dashboard, {
          path: DASHBOARD_PATH,
          secure: ctx.config.publicUrl.startsWith('https:'),
          csrfCookie: CSRF_COOKIE,
          userInfo: csrfUserInfo,
        });
        // Pages show a brand's data: never kept by shared caches or the back-forward cache.
        // (The hashed assets below set their own, long-lived Cache-Control.)
        dashboard.addHook('onRequest', async (_request, reply) => {
          reply.header('cache-control', 'no-store');
        });
        dashboard.setErrorHandler(htmlErrorHandler);
        dashboard.setNotFoundHandler((request, reply) =>
          sendErrorPage(reply, request, 404, 'There is no page at this address.'),
        );
        await dashboard.register(dashboardAssets.plugin, { prefix: '/assets' });
        loginRoutes(dashboard, ctx);

        await dashboard.register(async (scope) => {
          const signedIn = scope.withTypeProvider<TypeBoxTypeProvider>();
          signedIn.addHook('onRequest', requireSession(ctx));
          logoutRoute(signedIn, ctx);
          overviewPages(signedIn, ctx);
          offerPages(signedIn, ctx);
          partnerPages(signedIn, ctx);
          partnerPortalPages(signedIn, ctx);
          payoutPages(signedIn, ctx);
          conversionPages(signedIn, ctx);
          clickPages(signedIn, ctx);
          reportPages(signedIn, ctx);
          analyticsPages(signedIn, ctx);
          webhookPages(signedIn, ctx);
          webhookOperationPages(signedIn, ctx);
          deliveryPages(signedIn, ctx);
          brandSettingsPages(signedIn, ctx);
          apiKeyPages(signedIn, ctx);
          blocklistPages(signedIn, ctx);
        });
      },
      { prefix: DASHBOARD_PATH },
    );
  };
}
