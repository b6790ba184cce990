/**
 * A refused reason (a partner's ban, a conversion's rejection): the reason sits in a small
 * row form of a list or a page, so a refusal answers 422 with a page of that one form, the
 * reason as typed and the problem beside it, as every other refused form does (not a
 * redirect whose flash the user must match with a field that has already lost the text).
 */
import { escapeHtml } from '@kitajs/html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../../../http/errors.js';
import { FormView } from '../../../web/views/form.js';
import { render } from '../respond.js';
import { CsrfField } from '../views/components.js';
import type { Section } from '../views/layout.js';

/** What the reason's own length limit is (BanBody, RejectBody). */
const MAX_REASON_LENGTH = '500';

export interface RefusedReason {
  title: string;
  section: Section;
  /** Where the form posts, with the fields it carried besides the reason (back, ids…). */
  action: string;
  hidden: Record<string, string | string[]>;
  reason: string;
  label: string;
  submitLabel: string;
  back: string;
  error: ApiError;
}

export function showRefusedReason(
  request: FastifyRequest,
  reply: FastifyReply,
  refused: RefusedReason,
): Promise<FastifyReply> {
  const form = new FormView({ reason: refused.reason }, { reason: refused.label }, refused.error);
  const hidden = Object.entries(refused.hidden).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((v) => <input type="hidden" name={name} value={escapeHtml(v)} />),
  );
  return render(request, reply, {
    title: refused.title,
    section: refused.section,
    status: refused.error.status,
    body: (session) => (
      <>
        <h1 safe>{refused.title}</h1>
        {form.summary()}
        <form method="post" action={refused.action} class="stack" novalidate>
          <CsrfField token={session.csrfToken} />
          {hidden}
          {form.input('reason', { hint: 'Optional; up to 500 characters.', attrs: { maxlength: MAX_REASON_LENGTH } })}
          <div class="actions">
            <button type="submit" class="danger" safe>
              {refused.submitLabel}
            </button>
            <a href={escapeHtml(refused.back)}>Cancel</a>
          </div>
        </form>
      </>
    ),
  });
}
