/** Error pages: the dashboard answers in HTML, never with the API's JSON errors. */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../../http/errors.js';
import { sendPage } from '../../web/page.js';
import { describeIssues } from './forms.js';
import { formToken } from './session.js';
import { BarePage, Page } from './views/layout.js';

const TITLES: Record<number, string> = {
  400: 'Bad request',
  403: 'This form could not be accepted',
  404: 'Not found',
  409: 'Not possible right now',
  413: 'Too large',
  415: 'Unsupported form',
  422: 'Not accepted',
  429: 'Too many attempts',
  503: 'Temporarily unavailable',
};

const FORGED_FORM =
  'The security token of the form was missing or did not match your session. Reload the page and try again.';

export function sendErrorPage(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
  title = TITLES[status] ?? 'Something went wrong',
): Promise<FastifyReply> {
  const body = (
    <>
      <h1 safe>{title}</h1>
      <p safe>{message}</p>
      <p>
        <a href="/dashboard">Back to the overview</a>
      </p>
    </>
  );
  const session = request.dashboardSession;
  const page = session ? (
    <Page title={title} section={null} session={{ ...session, csrfToken: formToken(request, reply) }}>
      {body}
    </Page>
  ) : (
    <BarePage title={title}>
      <div class="login">{body}</div>
    </BarePage>
  );
  return sendPage(reply, page, status);
}

export function notFound(reply: FastifyReply, request: FastifyRequest, what = 'page'): Promise<FastifyReply> {
  return sendErrorPage(reply, request, 404, `There is no such ${what} in your brand.`);
}

/** What the request sent that a route's schema refused, in words. */
function refusedInput(error: FastifyError): string {
  const part = error.validationContext === 'body' ? 'form' : 'address';
  const problems = describeIssues(error.validation ?? []).map(
    (d) => `${d.path ? `${d.path} in the ${part}` : `the ${part}`}: ${d.message}`,
  );
  return `This request cannot be used: ${problems.join('; ')}.`;
}

export function htmlErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code === 'FST_CSRF_MISSING_SECRET' || error.code === 'FST_CSRF_INVALID_TOKEN') {
    return sendErrorPage(reply, request, 403, FORGED_FORM);
  }
  if (error.validation) return sendErrorPage(reply, request, 422, refusedInput(error));
  const apiError = toApiError(error);
  if (apiError.headers) reply.headers(apiError.headers);
  if (apiError.status >= 500 && apiError.status !== 503) {
    request.log.error({ err: error }, 'dashboard request failed');
    return sendErrorPage(reply, request, 500, 'Something went wrong on our side. Please try again.');
  }
  return sendErrorPage(reply, request, apiError.status, apiError.message);
}
