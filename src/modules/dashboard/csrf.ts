/**
 * CSRF protection: every POST carries the session's token in the hidden `_csrf` field
 * (the sign-in form, before a session exists, carries the token of its own Strict cookie).
 * Compared in constant time; a missing or wrong token is refused with 403.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorPage } from './errors.js';
import { field, formBody } from './forms.js';
import { sessionOf } from './session.js';

/** Hashing first gives equal-length buffers, so lengths leak nothing either. */
export function tokensMatch(given: string | undefined, expected: string | undefined): boolean {
  if (!given || !expected) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function refuseForgedForm(reply: FastifyReply, request: FastifyRequest): FastifyReply {
  return reply
    .code(403)
    .type('text/html; charset=utf-8')
    .send(
      errorPage(
        'This form could not be accepted',
        'The security token of the form was missing or did not match your session. Reload the page and try again.',
        request.dashboardSession,
      ),
    );
}

/** preHandler of the signed-in scope: every POST needs the session's token. */
export async function verifyCsrf(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.method !== 'POST') return;
  const session = sessionOf(request);
  if (!tokensMatch(field(formBody(request.body), '_csrf'), session.csrfToken)) {
    await refuseForgedForm(reply, request);
  }
}
