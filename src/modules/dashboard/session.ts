/**
 * The dashboard's cookies (session, sign-in form token, flash message) and the hook that
 * admits only signed-in users. Cookies are HttpOnly, scoped to /dashboard, SameSite, and
 * Secure whenever the service is published over https.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { type DashboardSession, findSession, SESSION_TTL_MS } from '../users/sessions.js';
import type { Flash } from './layout.js';

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession?: DashboardSession;
  }
}

export const SESSION_COOKIE = 'affitrack_session';
export const LOGIN_COOKIE = 'affitrack_login';
const FLASH_COOKIE = 'affitrack_flash';
const COOKIE_PATH = '/dashboard';
/** The sign-in form's token lives as long as a person might leave the form open. */
const LOGIN_TOKEN_MAX_AGE_S = 3600;
/** A flash message only has to survive the redirect that follows a form post. */
const FLASH_MAX_AGE_S = 60;
const MAX_FLASH_LENGTH = 1000;

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

function setCookie(
  ctx: AppContext,
  reply: FastifyReply,
  name: string,
  value: string,
  maxAgeSeconds: number,
  sameSite: 'Lax' | 'Strict' = 'Lax',
): void {
  const secure = ctx.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${name}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=${sameSite}${secure}`,
  );
}

export function setSessionCookie(ctx: AppContext, reply: FastifyReply, token: string): void {
  setCookie(ctx, reply, SESSION_COOKIE, token, SESSION_TTL_MS / 1000);
}

/** Strict: the sign-in token never travels with a request started by another site. */
export function setLoginCookie(ctx: AppContext, reply: FastifyReply, token: string): void {
  setCookie(ctx, reply, LOGIN_COOKIE, token, LOGIN_TOKEN_MAX_AGE_S, 'Strict');
}

export function clearCookie(ctx: AppContext, reply: FastifyReply, name: string): void {
  setCookie(ctx, reply, name, '', 0);
}

/** Redirects (303, so the browser follows with GET) and shows `flash` on the next page. */
export function redirectWithFlash(ctx: AppContext, reply: FastifyReply, location: string, flash?: Flash): FastifyReply {
  if (flash) {
    const text = flash.text.slice(0, MAX_FLASH_LENGTH);
    setCookie(
      ctx,
      reply,
      FLASH_COOKIE,
      Buffer.from(JSON.stringify({ ...flash, text })).toString('base64url'),
      FLASH_MAX_AGE_S,
    );
  }
  return reply.code(303).header('location', location).send();
}

/** The flash message left by the previous response, cleared as it is read. */
export function takeFlash(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Flash | null {
  const raw = readCookie(request, FLASH_COOKIE);
  if (!raw) return null;
  clearCookie(ctx, reply, FLASH_COOKIE);
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

/** Only paths inside the dashboard are followed after sign-in (no open redirect). */
export function safeDashboardPath(candidate: string | undefined, fallback = '/dashboard'): string {
  if (!candidate || candidate.length > 1000) return fallback;
  if (!/^\/dashboard(?:[/?]|$)/.test(candidate)) return fallback;
  if (/[\\\s]|\/\/|\/\.\.?(?:[/?]|$)/.test(candidate)) return fallback;
  return candidate;
}

/** onRequest hook of every signed-in page: no valid session → 303 to the sign-in page. */
export function requireSession(ctx: AppContext) {
  return async function requireDashboardSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const lookup = await findSession(ctx, readCookie(request, SESSION_COOKIE));
    if (lookup.status === 'valid') {
      request.dashboardSession = lookup.session;
      return;
    }
    if (lookup.status === 'expired') clearCookie(ctx, reply, SESSION_COOKIE);
    const query = new URLSearchParams();
    if (lookup.status === 'expired') query.set('expired', '1');
    if (request.method === 'GET') query.set('next', request.url);
    const text = query.toString();
    await reply
      .code(303)
      .header('location', `/dashboard/login${text ? `?${text}` : ''}`)
      .send();
  };
}

/** The signed-in session of a request that passed `requireSession`. */
export function sessionOf(request: FastifyRequest): DashboardSession {
  const session = request.dashboardSession;
  if (!session) throw new Error('dashboard route reached without a session');
  return session;
}
