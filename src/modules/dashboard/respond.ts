/** Helpers every page handler uses: read the query, render a page, act on a service error. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ApiError, toApiError } from '../../http/errors.js';
import type { DashboardSession } from '../users/sessions.js';
import { sendErrorPage } from './errors.js';
import type { Renderable } from './html.js';
import { type Flash, page, type Section } from './layout.js';
import { redirectWithFlash, sessionOf, takeFlash } from './session.js';

/** A query parameter as one trimmed string ('' when absent, repeated or too long). */
export function queryParam(request: FastifyRequest, name: string, maxLength = 200): string {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value.length <= maxLength ? value.trim() : '';
}

/** A path parameter; ids longer than any of ours cannot exist, so they are simply not found. */
export function pathId(request: FastifyRequest): string {
  const id = (request.params as Record<string, string | undefined>).id ?? '';
  return id.length <= 64 ? id : '';
}

export interface RenderOptions {
  title: string;
  section: Section;
  body: (session: DashboardSession) => Renderable;
  status?: number;
  flash?: Flash | null;
}

export function render(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, options: RenderOptions) {
  const session = sessionOf(request);
  const flash = options.flash === undefined ? takeFlash(ctx, request, reply) : options.flash;
  return reply
    .code(options.status ?? 200)
    .type('text/html; charset=utf-8')
    .send(page({ title: options.title, section: options.section, session, body: options.body(session), flash }));
}

/**
 * Runs a one-click action (approve, ban, revoke…). Success and refusals (409, 422) go back
 * to `back` with a message; an id of another brand is a 404 page, as in the API.
 */
export async function runAction(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  back: string,
  action: () => Promise<string>,
): Promise<FastifyReply> {
  try {
    const message = await action();
    return redirectWithFlash(ctx, reply, back, { kind: 'ok', text: message });
  } catch (error) {
    const apiError = toApiError(error);
    if (apiError.status === 404) return sendErrorPage(reply, request, 404, apiError.message);
    if (apiError.status >= 500) throw error;
    return redirectWithFlash(ctx, reply, back, { kind: 'error', text: apiError.message });
  }
}

/** A service error a form can show next to its fields (422), or a refusal (409); others propagate. */
export function formError(error: unknown): ApiError {
  if (error instanceof ApiError && (error.status === 422 || error.status === 409)) return error;
  throw error;
}
