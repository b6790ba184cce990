/** Rendering a portal page, running a portal action, and the portal's error pages. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../../http/errors.js';
import { sendPage } from '../../web/page.js';
import { describeIssues } from '../dashboard/forms.js';
import { type Flash, redirectWithFlash, takeFlash } from '../dashboard/session.js';
import type { PartnerSession } from './sessions.js';
import { PortalBarePage, PortalPage, type PortalSection } from './views/layout.js';
import { partnerSessionOf, portalFormToken } from './web.js';

export type PortalApp = Parameters<FastifyPluginAsyncTypebox>[0];

export interface PortalRender {
  title: string;
  section: PortalSection | null;
  body: (session: PartnerSession, csrf: string) => JSX.Element;
  status?: number;
  flash?: Flash | null;
}

export function renderPortal(request: FastifyRequest, reply: FastifyReply, o: PortalRender): Promise<FastifyReply> {
  const session = partnerSessionOf(request);
  const csrf = portalFormToken(request, reply);
  const flash = o.flash === undefined ? takeFlash(request, reply) : o.flash;
  return sendPage(
    reply,
    <PortalPage title={o.title} section={o.section} session={session} csrfToken={csrf} flash={flash}>
      {o.body(session, csrf)}
    </PortalPage>,
    o.status ?? 200,
  );
}

/** Runs an action; success and refusals go back to `back` with a message; 404s are a page. */
export async function runPortalAction(
  request: FastifyRequest,
  reply: FastifyReply,
  back: string,
  action: () => Promise<string>,
): Promise<FastifyReply> {
  try {
    return redirectWithFlash(reply, back, { kind: 'ok', text: await action() });
  } catch (error) {
    const apiError = toApiError(error);
    if (apiError.status === 404) return sendPortalError(reply, request, 404, apiError.message);
    if (apiError.status >= 500) throw error;
    return redirectWithFlash(reply, back, { kind: 'error', text: apiError.message });
  }
}

const TITLES: Record<number, string> = {
  400: 'Bad request',
  403: 'This form could not be accepted',
  404: 'Not found',
  409: 'Not possible right now',
  422: 'Not accepted',
  429: 'Too many attempts',
  503: 'Temporarily unavailable',
};

export function sendPortalError(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
): Promise<FastifyReply> {
  const title = TITLES[status] ?? 'Something went wrong';
  const body = (
    <>
      <h1 safe>{title}</h1>
      <p safe>{message}</p>
      <p>
        <a href="/portal">Back to the portal</a>
      </p>
    </>
  );
  if (request.partnerSession) {
    return renderPortal(request, reply, { title, section: null, status, flash: null, body: () => body });
  }
  return sendPage(
    reply,
    <PortalBarePage title={title}>
      <div class="login">{body}</div>
    </PortalBarePage>,
    status,
  );
}

export function portalErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code === 'FST_CSRF_MISSING_SECRET' || error.code === 'FST_CSRF_INVALID_TOKEN') {
    return sendPortalError(reply, request, 403, 'The security token of the form did not match. Reload and try again.');
  }
  if (error.validation) {
    const problems = describeIssues(error.validation).map((d) => `${d.path || 'the request'}: ${d.message}`);
    return sendPortalError(reply, request, 422, `This request cannot be used: ${problems.join('; ')}.`);
  }
  const apiError = toApiError(error);
  if (apiError.headers) reply.headers(apiError.headers);
  if (apiError.status >= 500 && apiError.status !== 503) {
    request.log.error({ err: error }, 'portal request failed');
    return sendPortalError(reply, request, 500, 'Something went wrong on our side. Please try again.');
  }
  return sendPortalError(reply, request, apiError.status, apiError.message);
}
