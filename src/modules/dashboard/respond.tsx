/** Helpers every page handler uses: render a page, act on a service error. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../../http/errors.js';
import { sendPage } from '../../web/page.js';
import { sendErrorPage } from './errors.js';
import { type Flash, formToken, type PageSession, redirectWithFlash, sessionOf, takeFlash } from './session.js';
import { Page, type Section } from './views/layout.js';

/** The signed-in scope, with route schemas typing `request.query`, `params` and `body`. */
export type DashboardApp = Parameters<FastifyPluginAsyncTypebox>[0];

export interface RenderOptions {
  title: string;
  section: Section;
  body: (session: PageSession) => JSX.Element;
  status?: number;
  flash?: Flash | null;
}

export function render(request: FastifyRequest, reply: FastifyReply, options: RenderOptions): Promise<FastifyReply> {
  const session: PageSession = { ...sessionOf(request), csrfToken: formToken(request, reply) };
  const flash = options.flash === undefined ? takeFlash(request, reply) : options.flash;
  const page = (
    <Page title={options.title} section={options.section} session={session} flash={flash}>
      {options.body(session)}
    </Page>
  );
  return sendPage(reply, page, options.status ?? 200);
}

/**
 * Runs a one-click action (approve, ban, revoke…). Success and refusals (409, 422) go back
 * to `back` with a message; an id of another brand is a 404 page, as in the API.
 */
export async function runAction(
  request: FastifyRequest,
  reply: FastifyReply,
  back: string,
  action: () => Promise<string>,
): Promise<FastifyReply> {
  try {
    const message = await action();
    return redirectWithFlash(reply, back, { kind: 'ok', text: message });
  } catch (error) {
    const apiError = toApiError(error);
    if (apiError.status === 404) return sendErrorPage(reply, request, 404, apiError.message);
    if (apiError.status >= 500) throw error;
    return redirectWithFlash(reply, back, { kind: 'error', text: apiError.message });
  }
}
