/** Approve and reject conversions, one or many, through the conversion service. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../context.js';
import { toApiError } from '../../../http/errors.js';
import { RejectBody } from '../../conversions/schemas.js';
import { approveConversion, rejectConversion } from '../../conversions/service.js';
import { sendErrorPage } from '../errors.js';
import { field, formBody, validateAgainst } from '../forms.js';
import { pathId, runAction } from '../respond.js';
import { redirectWithFlash, safeDashboardPath, sessionOf } from '../session.js';

/** A page of the list holds at most this many; more in one post is not a person's doing. */
const MAX_BULK = 100;

function reasonOf(form: URLSearchParams): string | null {
  const input = { reason: field(form, 'reason') || null };
  validateAgainst(RejectBody, input);
  return input.reason;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function conversionDecisionRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/conversions/:id/approve', async (request, reply) => {
    const { brand } = sessionOf(request);
    const id = pathId(request);
    return runAction(ctx, request, reply, `/dashboard/conversions/${id}`, async () => {
      await approveConversion(ctx, brand.id, id);
      return 'Conversion approved.';
    });
  });

  app.post('/conversions/:id/reject', async (request, reply) => {
    const { brand } = sessionOf(request);
    const id = pathId(request);
    const form = formBody(request.body);
    return runAction(ctx, request, reply, `/dashboard/conversions/${id}`, async () => {
      await rejectConversion(ctx, brand.id, id, reasonOf(form));
      return 'Conversion rejected.';
    });
  });

  /**
   * The list's one form: a row's own Approve/Reject button names that row; the bulk
   * buttons act on the ticked rows.
   */
  app.post('/conversions/bulk', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    const back = safeDashboardPath(field(form, 'back'), '/dashboard/conversions');
    const single = field(form, 'approve') ? 'approve' : field(form, 'reject') ? 'reject' : null;
    const action = single ?? field(form, 'action');
    const ids = single ? [field(form, single)] : [...new Set(form.getAll('ids'))];
    if (action !== 'approve' && action !== 'reject') {
      return redirectWithFlash(ctx, reply, back, { kind: 'error', text: 'Choose Approve or Reject.' });
    }
    if (ids.length === 0) {
      return redirectWithFlash(ctx, reply, back, { kind: 'error', text: 'Select at least one conversion first.' });
    }
    if (ids.length > MAX_BULK) {
      return redirectWithFlash(ctx, reply, back, {
        kind: 'error',
        text: `Select at most ${MAX_BULK} conversions at once.`,
      });
    }
    let reason: string | null = null;
    try {
      if (action === 'reject') reason = reasonOf(form);
    } catch (error) {
      return redirectWithFlash(ctx, reply, back, { kind: 'error', text: toApiError(error).message });
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
      return redirectWithFlash(ctx, reply, back, { kind: 'ok', text: `${plural(done, 'conversion')} ${verb}.` });
    }
    const why = failures
      .slice(0, 5)
      .map((f) => `${f.id}: ${f.error.status === 404 ? 'not found' : f.error.message}`)
      .join(' ');
    return redirectWithFlash(ctx, reply, back, {
      kind: 'error',
      text: `${plural(done, 'conversion')} ${verb}; ${plural(failures.length, 'conversion')} could not be ${verb}. ${why}`,
    });
  });
}
