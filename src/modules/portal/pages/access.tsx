/** Sign-in, sign-out, and accepting an invite (which sets or resets the password). */

import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { enforceClientRateLimit } from '../../../http/auth.js';
import { ApiError } from '../../../http/errors.js';
import { sendPage } from '../../../web/page.js';
import { FormBody, Query, text } from '../../dashboard/forms.js';
import { type Flash, redirectWithFlash } from '../../dashboard/session.js';
import { CsrfField } from '../../dashboard/views/components.js';
import { FlashMessage } from '../../dashboard/views/layout.js';
import { SignInCard } from '../../dashboard/views/signIn.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../users/passwords.js';
import { acceptInvite, findInvite, passwordProblem } from '../invites.js';
import type { PortalApp } from '../respond.js';
import { endPartnerSession, findPartnerSession, openPartnerSession, signInPartner } from '../sessions.js';
import { PortalBarePage } from '../views/layout.js';
import {
  clearPortalSessionCookie,
  PORTAL_SESSION_COOKIE,
  partnerSessionOf,
  portalFormToken,
  setPortalSessionCookie,
} from '../web.js';

/** Sign-in attempts per client IP per minute: plenty for people, slow for password guessing. */
export const PORTAL_LOGIN_ATTEMPTS_PER_MINUTE = 10;

const LoginQuery = Query({
  expired: Type.Optional(Type.String({ maxLength: 10 })),
  signedout: Type.Optional(Type.String({ maxLength: 10 })),
});
const LoginForm = FormBody({
  email: Type.Optional(Type.String({ maxLength: 1000 })),
  password: Type.Optional(Type.String({ maxLength: 4096 })),
});
const InviteQuery = Query({ token: Type.Optional(Type.String({ maxLength: 100 })) });
const InviteForm = FormBody({
  token: Type.Optional(Type.String({ maxLength: 100 })),
  password: Type.Optional(Type.String({ maxLength: 4096 })),
  confirm: Type.Optional(Type.String({ maxLength: 4096 })),
});

function LoginPage(props: { csrf: string; email?: string; message?: Flash | null; refused?: boolean }) {
  return (
    <PortalBarePage title="Partner sign-in">
      <SignInCard
        heading="Partner portal"
        action="/portal/login"
        csrfToken={props.csrf}
        email={props.email}
        message={props.message}
        refused={props.refused}
      >
        Forgot your password? Ask the brand you work with for a new invite link.
      </SignInCard>
    </PortalBarePage>
  );
}

function InvitePage(props: { csrf: string; token: string; partnerName: string; brandName: string; error?: string }) {
  return (
    <PortalBarePage title="Set your password">
      <div class="login">
        <h1>Set your password</h1>
        <p safe>
          {props.brandName} invites {props.partnerName} to the partner portal: your clicks, conversions, earnings and
          payouts.
        </p>
        <FlashMessage flash={props.error ? { kind: 'error', text: props.error } : null} id="password-error" />
        <form method="post" action="/portal/invite" class="stack" novalidate>
          <CsrfField token={props.csrf} />
          <input type="hidden" name="token" value={escapeHtml(props.token)} />
          <div>
            <label for="password">New password</label>
            <input
              id="password"
              name="password"
              type="password"
              autocomplete="new-password"
              minlength={String(MIN_PASSWORD_LENGTH)}
              maxlength={String(MAX_PASSWORD_LENGTH)}
              required
              aria-invalid={props.error ? 'true' : undefined}
              aria-describedby={props.error ? 'password-error password-hint' : 'password-hint'}
              autofocus
            />
            <p class="hint" id="password-hint">{`At least ${MIN_PASSWORD_LENGTH} characters.`}</p>
          </div>
          <div>
            <label for="confirm">Repeat the password</label>
            <input id="confirm" name="confirm" type="password" autocomplete="new-password" required />
          </div>
          <div>
            <button type="submit">Save and sign in</button>
          </div>
        </form>
      </div>
    </PortalBarePage>
  );
}

function InvalidInvite() {
  return (
    <PortalBarePage title="Invite not valid">
      <div class="login">
        <h1>This invite link cannot be used</h1>
        <p>It has expired, was already used, or was replaced by a newer one. Ask the brand for a new invite.</p>
        <p>
          <a href="/portal/login">Partner sign-in</a>
        </p>
      </div>
    </PortalBarePage>
  );
}

/** Told only to whoever typed the account's password (sessions.ts signInPartner). */
const BANNED =
  'Your partner account is suspended: the brand has banned it, so you cannot sign in. Contact the brand if you think this is a mistake.';

function showLogin(request: FastifyRequest, reply: FastifyReply, status: number, email = '', message?: Flash | null) {
  const page = (
    <LoginPage csrf={portalFormToken(request, reply)} email={email} message={message} refused={status === 422} />
  );
  return sendPage(reply, page, status);
}

export function accessRoutes(app: PortalApp, ctx: AppContext): void {
  app.get('/login', { schema: { querystring: LoginQuery } }, async (request, reply) => {
    const lookup = await findPartnerSession(ctx, request.cookies[PORTAL_SESSION_COOKIE]);
    if (lookup.status === 'valid') return reply.redirect('/portal', 303);
    let message: Flash | null = null;
    if (request.query.expired) message = { kind: 'error', text: 'Your session has ended. Please sign in again.' };
    if (request.query.signedout) message = { kind: 'ok', text: 'You have signed out.' };
    return showLogin(request, reply, 200, '', message);
  });

  app.post('/login', { schema: { body: LoginForm } }, async (request, reply) => {
    const email = text(request.body.email).slice(0, 254);
    try {
      await enforceClientRateLimit(ctx, request, reply, 'portal-login', PORTAL_LOGIN_ATTEMPTS_PER_MINUTE);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error;
      if (error.headers) reply.headers(error.headers);
      const wait = error.headers?.['Retry-After'] ?? '60';
      const message: Flash = { kind: 'error', text: `Too many sign-in attempts. Please wait ${wait} seconds.` };
      return showLogin(request, reply, 429, email, message);
    }
    const signedIn = await signInPartner(ctx, email, request.body.password ?? '');
    if (!signedIn) {
      return showLogin(request, reply, 422, email, { kind: 'error', text: 'The email or password is not correct.' });
    }
    if ('banned' in signedIn) return showLogin(request, reply, 403, email, { kind: 'error', text: BANNED });
    setPortalSessionCookie(reply, signedIn.token);
    return reply.redirect('/portal', 303);
  });

  app.get('/invite', { schema: { querystring: InviteQuery } }, async (request, reply) => {
    const found = await findInvite(ctx, request.query.token);
    if (!found) return sendPage(reply, <InvalidInvite />, 404);
    const brand = await ctx.db.read
      .selectFrom('brands')
      .select('name')
      .where('id', '=', found.partner.brand_id)
      .executeTakeFirstOrThrow();
    const csrf = portalFormToken(request, reply);
    const props = { csrf, token: request.query.token ?? '', partnerName: found.partner.name, brandName: brand.name };
    return sendPage(reply, <InvitePage {...props} />);
  });

  app.post('/invite', { schema: { body: InviteForm } }, async (request, reply) => {
    const token = request.body.token ?? '';
    const found = await findInvite(ctx, token);
    if (!found) return sendPage(reply, <InvalidInvite />, 404);
    const password = request.body.password ?? '';
    const problem = passwordProblem(password, request.body.confirm ?? '');
    if (problem) {
      const brand = await ctx.db.read
        .selectFrom('brands')
        .select('name')
        .where('id', '=', found.partner.brand_id)
        .executeTakeFirstOrThrow();
      const csrf = portalFormToken(request, reply);
      const props = { csrf, token, partnerName: found.partner.name, brandName: brand.name, error: problem };
      return sendPage(reply, <InvitePage {...props} />, 422);
    }
    const partner = await acceptInvite(ctx, token, password);
    if (!partner) return sendPage(reply, <InvalidInvite />, 404);
    setPortalSessionCookie(reply, await openPartnerSession(ctx, partner));
    return redirectWithFlash(reply, '/portal', { kind: 'ok', text: 'Your password is set. Welcome!' });
  });
}

export function logoutRoute(app: PortalApp, ctx: AppContext): void {
  app.post('/logout', { schema: { body: FormBody({}) } }, async (request, reply) => {
    partnerSessionOf(request);
    const token = request.cookies[PORTAL_SESSION_COOKIE];
    if (token) await endPartnerSession(ctx, token);
    clearPortalSessionCookie(reply);
    return redirectWithFlash(reply, '/portal/login?signedout=1');
  });
}
