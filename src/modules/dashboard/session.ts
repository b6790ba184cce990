/**
 * The dashboard's cookies (session, flash message), its CSRF tokens, and the hook that
 * admits only signed-in users. Cookies are set through @fastify/cookie with the defaults of
 * `browserForms` (HttpOnly, scoped to /dashboard, SameSite=Lax, Secure over https).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { hasControlCharacter, headerSafeUrl } from '../urls.js';
import { type DashboardSession, findSession, SESSION_TTL_MS } from '../users/sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession?: DashboardSession;
  }
}

export const DASHBOARD_PATH = '/dashboard';
export const SESSION_COOKIE = 'affitrack_session';
export const CSRF_COOKIE = 'affitrack_csrf';
const FLASH_COOKIE = 'affitrack_flash';
/** A flash message only has to survive the redirect that follows a form post. */
const FLASH_MAX_AGE_S = 60;
const MAX_FLASH_LENGTH = 1000;
/** What a form token of the sign-in page is bound to, before a session exists. */
const SIGNED_OUT = 'signed-out';

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

/** A signed-in session as pages see it: with the CSRF token of the forms they render. */
export interface PageSession extends DashboardSession {
  csrfToken: string;
}

/**
 * Form tokens are bound to the session's own secret (kept in the database, never sent), so
 * a token is worthless in any other session, even one of the same browser.
 */
export function csrfUserInfo(request: FastifyRequest): string {
  return request.dashboardSession?.csrfSecret ?? SIGNED_OUT;
}

/** A CSRF token for the forms of the page being rendered. */
export function formToken(request: FastifyRequest, reply: FastifyReply): string {
  return reply.generateCsrf({ userInfo: csrfUserInfo(request) });
}

export function setSessionCookie(reply: FastifyReply, token: string): void {
  reply.setCookie(SESSION_COOKIE, token, { maxAge: SESSION_TTL_MS / 1000 });
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE);
}

/** Redirects (303, so the browser follows with GET) and shows `flash` on the next page. */
export function redirectWithFlash(reply: FastifyReply, location: string, flash?: Flash): FastifyReply {
  if (flash) {
    const text = flash.text.slice(0, MAX_FLASH_LENGTH);
    const value = Buffer.from(JSON.stringify({ ...flash, text })).toString('base64url');
    reply.setCookie(FLASH_COOKIE, value, { maxAge: FLASH_MAX_AGE_S });
  }
  // A path may hold an id decoded from the request (/dashboard/partners/日): encoded here.
  return reply.code(303).header('location', headerSafeUrl(location)).send();
}

/** The flash message left by the previous response, cleared as it is read. */
export function takeFlash(request: FastifyRequest, reply: FastifyReply): Flash | null {
  const raw = request.cookies[FLASH_COOKIE];
  if (!raw) return null;
  reply.clearCookie(FLASH_COOKIE);
  try {
    const parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<Flash>;
    if ((parsed.kind === 'ok' || parsed.kind === 'error') && typeof parsed.text === 'string') {
      return { kind: parsed.kind, text: parsed.text.slice(0, MAX_FLASH_LENGTH) };
    }
  } catch {
    // A mangled cookie shows nothing rather than failing the page.
  }
  return null;
}

/**
 * Only paths inside the dashboard are followed after sign-in (no open redirect), with
 * characters a Location header cannot carry percent-encoded.
 */
export function safeDashboardPath(candidate: string | undefined, fallback = DASHBOARD_PATH): string {
  if (!candidate || candidate.length > 1000) return fallback;
  if (!/^\/dashboard(?:[/?]|$)/.test(candidate)) return fallback;
  if (/[\\\s]|\/\/|\/\.\.?(?:[/?]|$)/.test(candidate) || hasControlCharacter(candidate)) return fallback;
  return headerSafeUrl(candidate);
}

/** onRequest hook of every signed-in page: no valid session → 303 to the sign-in page. */
export function requireSession(ctx: AppContext) {
  return async function requireDashboardSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const lookup = await findSession(ctx, request.cookies[SESSION_COOKIE]);
    if (lookup.status === 'valid') {
      request.dashboardSession = lookup.session;
      return;
    }
    if (lookup.status === 'expired') clearSessionCookie(reply);
    const query = new URLSearchParams();
    if (lookup.status === 'expired') query.set('expired', '1');
    if (request.method === 'GET') query.set('next', request.url);
    const text = query.toString();
    await reply.redirect(`${DASHBOARD_PATH}/login${text ? `?${text}` : ''}`, 303);
  };
}

/** The signed-in session of a request that passed `requireSession`. */
export function sessionOf(request: FastifyRequest): DashboardSession {
  const session = request.dashboardSession;
  if (!session) throw new Error('dashboard route reached without a session');
  return session;
}
