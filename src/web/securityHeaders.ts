/**
 * The security headers of every HTML page we serve (the dashboard, the API docs, the partner
 * application form, and the partner portal), set by @fastify/helmet from one definition.
 *
 * They are registered per scope, not app-wide: the JSON API and the machine endpoints
 * (tracking link, postback pixel) keep their headers. A Referrer-Policy on the tracking
 * link's 302 would hide the partner's site from the advertiser, and a
 * Cross-Origin-Resource-Policy would break the pixel in an <img> on another site.
 */
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * Only our own scripts, styles and images (plus data: images, which swagger-ui draws with);
 * no inline script or style; fetches only to this origin (swagger-ui's "Try it out"); no
 * framing; forms post only back to us.
 */
export const CONTENT_SECURITY_POLICY = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'object-src': ["'none'"],
};

const HELMET_OPTIONS = {
  // Exactly the policy above: helmet's defaults would add `upgrade-insecure-requests`, which
  // breaks a deployment served over plain http on a private network.
  contentSecurityPolicy: { useDefaults: false, directives: CONTENT_SECURITY_POLICY },
  xFrameOptions: { action: 'deny' },
  // Links between our own pages keep their referrer; nothing leaks to other sites.
  referrerPolicy: { policy: 'same-origin' },
} satisfies HelmetOptions;

/** Adds the headers to every response of `scope` (an encapsulated plugin). */
export async function securityHeaders(scope: FastifyInstance): Promise<void> {
  await scope.register(fastifyHelmet, HELMET_OPTIONS);
}

/** The same headers written by helmet itself (what the plugin runs on each request), built once. */
const writePageHeaders = helmet(HELMET_OPTIONS);

/**
 * Adds the headers to one reply that no scope's hooks saw: a page's address the router
 * refused before routing (app.ts's frameworkErrors), answered with that page's HTML.
 */
export function setPageSecurityHeaders(reply: FastifyReply): void {
  writePageHeaders(reply.request.raw, reply.raw, (error) => {
    if (error) throw error;
  });
}
