/**
 * A page's address the router refused before routing (app.ts's frameworkErrors): a bad
 * %-escape is 400, a path segment over the router's length limit matches no page (404).
 * Dashboard, portal and application form answer it with their own error page, signed out
 * (no session was read); their hooks never ran, so the headers those would set are set here.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setPageSecurityHeaders } from './securityHeaders.js';

const REFUSALS = {
  undecodable: {
    status: 400,
    message: 'This address is not validly encoded (a “%” escape in it is not UTF-8). Check the link you followed.',
  },
  overlong: { status: 404, message: 'There is no page at this address.' },
} as const;

export type RouterRefusal = keyof typeof REFUSALS;

/** A side's error page: the dashboard's, the portal's or the application form's. */
export type ErrorPage = (
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
) => Promise<FastifyReply>;

/** True for `url` at `prefix` or below it (`/portal`, `/portal/…`, `/portal?…`, not `/portals`). */
export function isUnder(url: string, prefix: string): boolean {
  return url.startsWith(prefix) && /^[/?]?$/.test(url.charAt(prefix.length));
}

export function sendRouterRefusal(
  reply: FastifyReply,
  request: FastifyRequest,
  refusal: RouterRefusal,
  page: ErrorPage,
): Promise<FastifyReply> {
  // As the onRequest hook and the side's headers would have, had the request reached them.
  reply.header('X-Request-Id', request.id);
  reply.header('cache-control', 'no-store');
  setPageSecurityHeaders(reply);
  const { status, message } = REFUSALS[refusal];
  return page(reply, request, status, message);
}
