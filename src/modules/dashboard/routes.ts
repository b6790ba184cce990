/**
 * The web dashboard at /dashboard: server-rendered pages over the same services as the
 * API. Everything lives in one encapsulated plugin, so its form parser, HTML error pages
 * and security headers apply to the dashboard only.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ASSETS } from './assets.js';
import { verifyCsrf } from './csrf.js';
import { htmlErrorHandler, sendErrorPage } from './errors.js';
import { apiKeyPages } from './pages/apiKeys.js';
import { blocklistPages } from './pages/blocklist.js';
import { brandSettingsPages } from './pages/brandSettings.js';
import { conversionPages } from './pages/conversions.js';
import { deliveryPages } from './pages/deliveries.js';
import { loginRoutes, logoutRoute } from './pages/login.js';
import { offerPages } from './pages/offers.js';
import { overviewPages } from './pages/overview.js';
import { partnerPages } from './pages/partners.js';
import { reportPages } from './pages/reports.js';
import { webhookPages } from './pages/webhooks.js';
import { requireSession } from './session.js';

/**
 * Only our own script, styles and images; no inline script or style, no framing, forms
 * post only back to us.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

async function securityHeaders(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('content-security-policy', CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
  // Pages show a brand's data: never kept by shared caches or the back-forward cache.
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
}

function assetRoutes(app: FastifyInstance): void {
  app.get('/assets/:name', async (request, reply) => {
    const asset = ASSETS.get((request.params as { name: string }).name);
    if (!asset) return sendErrorPage(reply, request, 404, 'There is no such file.');
    // URLs carry the content hash, so a cached copy is never stale.
    return reply.header('cache-control', 'public, max-age=31536000, immutable').type(asset.type).send(asset.body);
  });
}

export function dashboardRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(
      async (dashboard) => {
        dashboard.addContentTypeParser(
          'application/x-www-form-urlencoded',
          { parseAs: 'string' },
          // NUL characters are refused by the app-wide check (http/nulBytes.ts), as in JSON.
          (_request, body, done) => done(null, new URLSearchParams(String(body))),
        );
        // HTML pages are not part of the API: keep them out of the OpenAPI document.
        dashboard.addHook('onRoute', (route) => {
          route.schema = { ...route.schema, hide: true };
        });
        dashboard.addHook('onRequest', securityHeaders);
        dashboard.setErrorHandler(htmlErrorHandler);
        dashboard.setNotFoundHandler((request, reply) =>
          sendErrorPage(reply, request, 404, 'There is no page at this address.'),
        );
        assetRoutes(dashboard);
        loginRoutes(dashboard, ctx);

        await dashboard.register(async (signedIn) => {
          signedIn.addHook('onRequest', requireSession(ctx));
          signedIn.addHook('preHandler', verifyCsrf);
          logoutRoute(signedIn, ctx);
          overviewPages(signedIn, ctx);
          offerPages(signedIn, ctx);
          partnerPages(signedIn, ctx);
          conversionPages(signedIn, ctx);
          reportPages(signedIn, ctx);
          webhookPages(signedIn, ctx);
          deliveryPages(signedIn, ctx);
          brandSettingsPages(signedIn, ctx);
          apiKeyPages(signedIn, ctx);
          blocklistPages(signedIn, ctx);
        });
      },
      { prefix: '/dashboard' },
    );
  };
}
