/** Sign-in and sign-out. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { enforceRateLimit } from '../../../http/auth.js';
import { ApiError } from '../../../http/errors.js';
import { endSession, findSession, newToken, signIn } from '../../users/sessions.js';
import { refuseForgedForm, tokensMatch } from '../csrf.js';
import { field, formBody } from '../forms.js';
import { html } from '../html.js';
import { barePage, type Flash, flashMessage } from '../layout.js';
import {
  clearCookie,
  LOGIN_COOKIE,
  readCookie,
  redirectWithFlash,
  SESSION_COOKIE,
  safeDashboardPath,
  sessionOf,
  setLoginCookie,
  setSessionCookie,
} from '../session.js';

/** Sign-in attempts per client IP per minute: plenty for people, slow for password guessing. */
export const LOGIN_ATTEMPTS_PER_MINUTE = 10;

function loginPage(token: string, options: { email?: string; next?: string; message?: Flash | null }): string {
  return barePage(
    'Sign in',
    html`<div class="login">
<h1>Sign in to Affitrack</h1>
${flashMessage(options.message)}
<form method="post" action="/dashboard/login" class="stack" novalidate>
<input type="hidden" name="_csrf" value="${token}">
<input type="hidden" name="next" value="${options.next ?? ''}">
<div><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${options.email ?? ''}" autofocus></div>
<div><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<div><button type="submit">Sign in</button></div>
</form>
<p class="hint">No account yet? An administrator creates one with <code>affitrack users create --brand ID --email you@example.com</code>.</p>
</div>`,
  );
}

function queryValue(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** Re-uses the form token of the browser's cookie when it has one, so two tabs both work. */
function loginToken(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): string {
  const existing = readCookie(request, LOGIN_COOKIE);
  const token = existing && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : newToken();
  setLoginCookie(ctx, reply, token);
  return token;
}

export function loginRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/login', async (request, reply) => {
    const lookup = await findSession(ctx, readCookie(request, SESSION_COOKIE));
    if (lookup.status === 'valid') return reply.code(303).header('location', '/dashboard').send();
    let message: Flash | null = null;
    if (queryValue(request, 'expired'))
      message = { kind: 'error', text: 'Your session has expired. Please sign in again.' };
    if (queryValue(request, 'signedout')) message = { kind: 'ok', text: 'You have signed out.' };
    const next = safeDashboardPath(queryValue(request, 'next'));
    return reply.type('text/html; charset=utf-8').send(loginPage(loginToken(ctx, request, reply), { next, message }));
  });

  app.post('/login', async (request, reply) => {
    const form = formBody(request.body);
    const email = field(form, 'email').slice(0, 254);
    const next = safeDashboardPath(field(form, 'next'));
    reply.type('text/html; charset=utf-8');
    try {
      await enforceRateLimit(ctx, request, reply, `dashboard-login:${request.ip}`, LOGIN_ATTEMPTS_PER_MINUTE);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error;
      if (error.headers) reply.headers(error.headers);
      const wait = error.headers?.['Retry-After'] ?? '60';
      return reply.code(429).send(
        loginPage(loginToken(ctx, request, reply), {
          email,
          next,
          message: { kind: 'error', text: `Too many sign-in attempts. Please wait ${wait} seconds and try again.` },
        }),
      );
    }
    if (!tokensMatch(field(form, '_csrf'), readCookie(request, LOGIN_COOKIE))) return refuseForgedForm(reply, request);

    const session = await signIn(ctx, email, (form.get('password') ?? '').slice(0, 1024));
    if (!session) {
      return reply.code(422).send(
        loginPage(loginToken(ctx, request, reply), {
          email,
          next,
          message: { kind: 'error', text: 'The email or password is not correct.' },
        }),
      );
    }
    clearCookie(ctx, reply, LOGIN_COOKIE);
    setSessionCookie(ctx, reply, session.token);
    return reply.code(303).header('location', next).send();
  });
}

/** Sign-out lives in the signed-in scope: it needs the session and its CSRF token. */
export function logoutRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/logout', async (request, reply) => {
    sessionOf(request);
    const token = readCookie(request, SESSION_COOKIE);
    if (token) await endSession(ctx, token);
    clearCookie(ctx, reply, SESSION_COOKIE);
    return redirectWithFlash(ctx, reply, '/dashboard/login?signedout=1');
  });
}
