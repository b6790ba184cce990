/**
 * The portal's cookies, CSRF binding and the hook admitting only signed-in partners. The
 * session cookie is scoped to /portal, so a dashboard session never reaches the portal and a
 * partner session never reaches the dashboard (each area only reads its own cookie).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { findPartnerSession, PARTNER_SESSION_TTL_MS, type PartnerSession } from './sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    partnerSession?: PartnerSession;
  }
}

export const PORTAL_PATH = '/portal';
export const PORTAL_SESSION_COOKIE = 'affitrack_portal_session';
export const PORTAL_CSRF_COOKIE = 'affitrack_portal_csrf';
const SIGNED_OUT = 'portal-signed-out';

export function portalCsrfUserInfo(request: FastifyRequest): string {
  return request.partnerSession?.csrfSecret ?? SIGNED_OUT;
}

export function portalFormToken(request: FastifyRequest, reply: FastifyReply): string {
  return reply.generateCsrf({ userInfo: portalCsrfUserInfo(request) });
}

export function setPortalSessionCookie(reply: FastifyReply, token: string): void {
  reply.setCookie(PORTAL_SESSION_COOKIE, token, { maxAge: PARTNER_SESSION_TTL_MS / 1000 });
}

export function clearPortalSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(PORTAL_SESSION_COOKIE);
}

export function requirePartnerSession(ctx: AppContext) {
  return async function requirePortalSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const lookup = await findPartnerSession(ctx, request.cookies[PORTAL_SESSION_COOKIE]);
    if (lookup.status === 'valid') {
      request.partnerSession = lookup.session;
      return;
    }
    if (lookup.status === 'expired') clearPortalSessionCookie(reply);
    await reply.redirect(`${PORTAL_PATH}/login${lookup.status === 'expired' ? '?expired=1' : ''}`, 303);
  };
}

export function partnerSessionOf(request: FastifyRequest): PartnerSession {
  const session = request.partnerSession;
  if (!session) throw new Error('portal route reached without a partner session');
  return session;
}
