/** Error pages: the dashboard answers in HTML, never with the API's JSON errors. */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../../http/errors.js';
import type { DashboardSession } from '../users/sessions.js';
import { html } from './html.js';
import { barePage, page } from './layout.js';

const TITLES: Record<number, string> = {
  400: 'Bad request',
  404: 'Not found',
  409: 'Not possible right now',
  413: 'Too large',
  415: 'Unsupported form',
  429: 'Too many attempts',
  503: 'Temporarily unavailable',
};

export function errorPage(title: string, message: string, session?: DashboardSession): string {
  const body = html`<h1>${title}</h1><p>${message}</p><p><a href="/dashboard">Back to the overview</a></p>`;
  if (session) return page({ title, section: null, session, body });
  return barePage(title, html`<div class="login">${body}</div>`);
}

export function sendErrorPage(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
  title = TITLES[status] ?? 'Something went wrong',
): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .send(errorPage(title, message, request.dashboardSession));
}

export function notFound(reply: FastifyReply, request: FastifyRequest, what = 'page'): FastifyReply {
  return sendErrorPage(reply, request, 404, `There is no such ${what} in your brand.`);
}

export function htmlErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(error);
  if (apiError.headers) reply.headers(apiError.headers);
  if (apiError.status >= 500 && apiError.status !== 503) {
    request.log.error({ err: error }, 'dashboard request failed');
    return sendErrorPage(reply, request, 500, 'Something went wrong on our side. Please try again.');
  }
  return sendErrorPage(reply, request, apiError.status, apiError.message);
}
