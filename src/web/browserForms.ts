/**
 * What a signed-in HTML area (the dashboard, the partner portal) needs to take form posts
 * from a browser: cookies (@fastify/cookie), url-encoded bodies (@fastify/formbody) and CSRF
 * tokens (@fastify/csrf-protection), registered in the area's own scope.
 *
 * CSRF: a random secret lives in an HttpOnly cookie; every form carries a token made from it
 * and from `userInfo` (the area binds tokens to its session with it), checked in constant
 * time before the body is validated. A token is read from url-encoded bodies only: a JSON
 * body carrying `_csrf` is not a form, and is refused.
 */
import cookie from '@fastify/cookie';
import csrfProtection from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formValidatorCompiler } from '../http/validation.js';
import { formBodies } from './formBodies.js';

export interface BrowserFormsOptions {
  /** The area's path: its cookies are sent to it only. */
  path: string;
  /** Cookies only over https (the service is published at an https URL). */
  secure: boolean;
  csrfCookie: string;
  /** What the area binds form tokens to (a session's secret; a constant before sign-in). */
  userInfo: (request: FastifyRequest) => string;
}

/**
 * The HMAC key of the token's `userInfo` part. It need not be secret: the areas pass a
 * secret of their own as `userInfo` (the session's, kept on the server), and the other part
 * is keyed by the cookie secret. A fixed key keeps tokens valid across processes and restarts.
 */
const USER_INFO_HMAC_KEY = 'affitrack-form-token';

const FORM_CONTENT_TYPE = /^application\/x-www-form-urlencoded\b/i;

function formToken(request: FastifyRequest): string | undefined {
  if (!FORM_CONTENT_TYPE.test(request.headers['content-type'] ?? '')) return undefined;
  const token = (request.body as Record<string, unknown> | undefined)?._csrf;
  return typeof token === 'string' ? token : undefined;
}

export async function browserForms(scope: FastifyInstance, options: BrowserFormsOptions): Promise<void> {
  // SameSite=Lax keeps every cookie off cross-site posts. Strict would also drop the CSRF
  // secret on a link from another site, and the page answering it would replace the secret
  // under the user's other open tabs, whose forms would then be refused.
  const defaults = { path: options.path, httpOnly: true, sameSite: 'lax', secure: options.secure } as const;
  await scope.register(cookie, { parseOptions: defaults });
  await formBodies(scope);
  await scope.register(csrfProtection, {
    cookieKey: options.csrfCookie,
    cookieOpts: defaults,
    getToken: formToken,
    getUserInfo: options.userInfo,
    csrfOpts: { hmacKey: USER_INFO_HMAC_KEY },
  });
  // Form fields are text, and a repeated field is a list: they follow the query-string rules.
  scope.setValidatorCompiler(formValidatorCompiler);
  // Every POST of the area needs a token (refused with a 403 FST_CSRF_* error otherwise),
  // checked before its body is validated: a route added later cannot forget it.
  scope.addHook('onRoute', (route) => {
    if (![route.method].flat().includes('POST')) return;
    route.preValidation = [scope.csrfProtection, ...[route.preValidation ?? []].flat()];
  });
}
