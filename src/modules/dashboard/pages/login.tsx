/** Sign-in and sign-out. */

import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { enforceClientRateLimit } from '../../../http/auth.js';
import { ApiError } from '../../../http/errors.js';
import { sendPage } from '../../../web/page.js';
import { endSession, findSession, signIn } from '../../users/sessions.js';
import { FormBody, Query, text } from '../forms.js';
import type { DashboardApp } from '../respond.js';
import {
  clearSessionCookie,
  type Flash,
  formToken,
  redirectWithFlash,
  SESSION_COOKIE,
  safeDashboardPath,
  sessionOf,
  setSessionCookie,
} from '../session.js';
import { BarePage } from '../views/layout.js';
import { SignInCard } from '../views/signIn.js';

/** Sign-in attempts per client IP per minute: plenty for people, slow for password guessing. */
export const LOGIN_ATTEMPTS_PER_MINUTE = 10;

/** Generous: a `next` too long to follow falls back to the overview instead of failing. */
const LoginQuery = Query({
  next: Type.Optional(Type.String({ maxLength: 8192 })),
  expired: Type.Optional(Type.String({ maxLength: 10 })),
  signedout: Type.Optional(Type.String({ maxLength: 10 })),
});
const LoginForm = FormBody({
  email: Type.Optional(Type.String({ maxLength: 1000 })),
  password: Type.Optional(Type.String({ maxLength: 4096 })),
  next: Type.Optional(Type.String({ maxLength: 8192 })),
});

function LoginPage(props: { token: string; email?: string; next?: string; message?: Flash | null; refused?: boolean }) {
  return (
    <BarePage title="Sign in">
      <SignInCard
        heading="Sign in to Affitrack"
        action="/dashboard/login"
        csrfToken={props.token}
        email={props.email}
        next={props.next ?? ''}
        message={props.message}
        refused={props.refused}
      >
        No account yet? An administrator creates one with{' '}
        <code>affitrack users create --brand ID --email you@example.com</code>.
      </SignInCard>
    </BarePage>
  );
}

function showLogin(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  props: { email?: string; next?: string; message?: Flash | null; refused?: boolean },
) {
  return sendPage(reply, <LoginPage token={formToken(request, reply)} {...props} />, status);
}

export function loginRoutes(app: DashboardApp, ctx: AppContext): void {
  app.get('/login', { schema: { querystring: LoginQuery } }, async (request, reply) => {
    const lookup = await findSession(ctx, request.cookies[SESSION_COOKIE]);
    if (lookup.status === 'valid') return reply.redirect('/dashboard', 303);
    let message: Flash | null = null;
    if (request.query.expired) message = { kind: 'error', text: 'Your session has expired. Please sign in again.' };
    if (request.query.signedout) message = { kind: 'ok', text: 'You have signed out.' };
    return showLogin(request, reply, 200, { next: safeDashboardPath(request.query.next), message });
  });

  // The form's CSRF token (bound to no session yet) is checked before this runs.
  app.post('/login', { schema: { body: LoginForm } }, async (request, reply) => {
    const email = text(request.body.email).slice(0, 254);
    const next = safeDashboardPath(text(request.body.next));
    try {
      await enforceClientRateLimit(ctx, request, reply, 'dashboard-login', LOGIN_ATTEMPTS_PER_MINUTE);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error;
      if (error.headers) reply.headers(error.headers);
      const wait = error.headers?.['Retry-After'] ?? '60';
      const text = `Too many sign-in attempts. Please wait ${wait} seconds and try again.`;
      return showLogin(request, reply, 429, { email, next, message: { kind: 'error', text } });
    }
    const session = await signIn(ctx, email, request.body.password ?? '');
    if (!session) {
      const message: Flash = { kind: 'error', text: 'The email or password is not correct.' };
      return showLogin(request, reply, 422, { email, next, message, refused: true });
    }
    setSessionCookie(reply, session.token);
    return reply.redirect(next, 303);
  });
}

/** Sign-out lives in the signed-in scope: it needs the session and its CSRF token. */
export function logoutRoute(app: DashboardApp, ctx: AppContext): void {
  app.post('/logout', { schema: { body: FormBody({}) } }, async (request, reply) => {
    sessionOf(request);
    const token = request.cookies[SESSION_COOKIE];
    if (token) await endSession(ctx, token);
    clearSessionCookie(reply);
    return redirectWithFlash(reply, '/dashboard/login?signedout=1');
  });
}
