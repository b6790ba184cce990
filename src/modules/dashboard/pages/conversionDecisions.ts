/** Approve and reject conversions, one or many, through the conversion service. */
import type { AppContext } from '../../../context.js';
import { toApiError } from '../../../http/errors.js';
import { formError } from '../../../web/views/form.js';
import { findConversion } from '../../conversions/repository.js';
import { RejectBody } from '../../conversions/schemas.js';
import { approveConversion, rejectConversion } from '../../conversions/service.js';
import { notFound, sendErrorPage } from '../errors.js';
import { Field, FormBody, IdParams, ListField, text, validateAgainst } from '../forms.js';
import { type DashboardApp, runAction } from '../respond.js';
import { redirectWithFlash, safeDashboardPath, sessionOf } from '../session.js';
import { showRefusedReason } from './reasonForm.js';

/** A page of the list holds at most this many; more in one post is not a person's doing. */
const MAX_BULK = 100;

/** `back`: the list a row's own Reject was pressed on (its reason is its own, never the bulk one). */
const RejectForm = FormBody({ reason: Field, back: Field });
/** The list's one form: a row's Approve (`approve` = its id) or the bulk `action` on `ids`. */
const BulkForm = FormBody({ back: Field, reason: Field, action: Field, approve: Field, ids: ListField });

const REJECT_PAGE = { section: 'conversions', submitLabel: 'Reject' } as const;

function reasonOf(form: { reason?: string }): string | null {
  const input = { reason: text(form.reason) || null };
  validateAgainst(RejectBody, input);
  return input.reason;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function conversionDecisionRoutes(app: DashboardApp, ctx: AppContext): void {
  app.post('/conversions/:id/approve', { schema: { params: IdParams, body: FormBody({}) } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { id } = request.params;
    return runAction(request, reply, `/dashboard/conversions/${id}`, async () => {
      await approveConversion(ctx, brand.id, id);
      return 'Conversion approved.';
    });
  });

  app.post('/conversions/:id/reject', { schema: { params: IdParams, body: RejectForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const { id } = request.params;
    const back = safeDashboardPath(text(request.body.back), `/dashboard/conversions/${id}`);
    let reason: string | null;
    try {
      reason = reasonOf(request.body);
    } catch (error) {
      if (!(await findConversion(ctx.db.read, brand.id, id))) return notFound(reply, request, 'conversion');
      return showRefusedReason(request, reply, {
        ...REJECT_PAGE,
        title: `Reject conversion ${id}`,
        action: `/dashboard/conversions/${id}/reject`,
        hidden: { back },
        reason: text(request.body.reason),
        label: `Reason for rejecting ${id}`,
        back,
        error: formError(error),
      });
    }
    return runAction(request, reply, back, async () => {
      await rejectConversion(ctx, brand.id, id, reason);
      return 'Conversion rejected.';
    });
  });

  /**
   * The list's one form: a row's own Approve button names that row; the bulk buttons act
   * on the ticked rows. (A row's Reject posts its own form, with its own reason.)
   */
  app.post('/conversions/bulk', { schema: { body: BulkForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = request.body;
    const back = safeDashboardPath(text(form.back), '/dashboard/conversions');
    const single = text(form.approve) ? 'approve' : null;
    const action = single ?? text(form.action);
    const ids = single ? [text(form.approve)] : [...new Set(form.ids ?? [])];
    if (action !== 'approve' && action !== 'reject') {
      // Also what the list's Enter-only button (action=none) posts without the script.
      return redirectWithFlash(reply, back, {
        kind: 'error',
        text: 'Nothing was decided: press “Approve selected” or “Reject selected”.',
      });
    }
    if (ids.length === 0) {
      return redirectWithFlash(reply, back, { kind: 'error', text: 'Select at least one conversion first.' });
    }
    if (ids.length > MAX_BULK) {
      return redirectWithFlash(reply, back, { kind: 'error', text: `Select at most ${MAX_BULK} conversions at once.` });
    }
    let reason: string | null = null;
    try {
      if (action === 'reject') reason = reasonOf(form);
    } catch (error) {
      return showRefusedReason(request, reply, {
        ...REJECT_PAGE,
        title: `Reject ${plural(ids.length, 'conversion')}`,
        action: '/dashboard/conversions/bulk',
        hidden: { back, action: 'reject', ids },
        reason: text(form.reason),
        label: 'Rejection reason',
        back,
        error: formError(error),
      });
    }
    const results = await Promise.allSettled(
      ids.map((id) =>
        action === 'approve' ? approveConversion(ctx, brand.id, id) : rejectConversion(ctx, brand.id, id, reason),
      ),
    );
    const failures = results.flatMap((r, i) =>
      r.status === 'rejected' ? [{ id: ids[i], error: toApiError(r.reason) }] : [],
    );
    const unexpected = failures.find((f) => f.error.status >= 500);
    if (unexpected) throw unexpected.error;
    if (single && failures[0]?.error.status === 404)
      return sendErrorPage(reply, request, 404, failures[0].error.message);
    const done = results.length - failures.length;
    const verb = action === 'approve' ? 'approved' : 'rejected';
    if (failures.length === 0) {
      return redirectWithFlash(reply, back, { kind: 'ok', text: `${plural(done, 'conversion')} ${verb}.` });
    }
    const why = failures
      .slice(0, 5)
      .map((f) => `${f.id}: ${f.error.status === 404 ? 'not found' : f.error.message}`)
      .join(' ');
    return redirectWithFlash(reply, back, {
      kind: 'error',
      text: `${plural(done, 'conversion')} ${verb}; ${plural(failures.length, 'conversion')} could not be ${verb}. ${why}`,
    });
  });
}
