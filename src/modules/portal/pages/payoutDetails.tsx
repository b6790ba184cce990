/** Payout details: how the partner wants to be paid (method and account text), stored for the brand. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { InvalidError, type Problem } from '../../../errors.js';
import { FormView, formError, type RefusedForm } from '../../../web/views/form.js';
import { Field, FormBody, multilineText, Query, text } from '../../dashboard/forms.js';
import { redirectWithFlash } from '../../dashboard/session.js';
import { CsrfField } from '../../dashboard/views/components.js';
import type { PortalApp } from '../respond.js';
import { renderPortal } from '../respond.js';
import { partnerSessionOf } from '../web.js';

export const PAYOUT_METHODS = ['PayPal', 'Bank transfer (IBAN)', 'Wise', 'Other'] as const;
/** Characters of account text, line breaks counted as one (as the textarea's `maxlength` counts them). */
const MAX_ACCOUNT_LENGTH = 500;
const DetailsForm = FormBody({ method: Field, account: Field });
const LABELS = { method: 'Method', account: 'Account' };
const ACCOUNT_HINT = 'For example your PayPal e-mail, or IBAN and account holder.';

export function payoutDetailsPage(app: PortalApp, ctx: AppContext): void {
  /** The form: the stored details, or a refused post (422) with what was typed and the problems beside the fields. */
  const show = async (request: FastifyRequest, reply: FastifyReply, refused?: RefusedForm) => {
    const session = partnerSessionOf(request);
    const stored = refused
      ? undefined
      : await ctx.db.read
          .selectFrom('partner_accounts')
          .select(['payout_method', 'payout_account'])
          .where('partner_id', '=', session.partner.id)
          .executeTakeFirst();
    const values = refused?.values ?? {
      method: stored?.payout_method ?? undefined,
      account: stored?.payout_account ?? undefined,
    };
    const f = new FormView(values, LABELS, refused?.error);
    return renderPortal(request, reply, {
      title: 'Payout details',
      section: 'payout-details',
      status: refused ? refused.error.status : 200,
      body: (_, csrf) => (
        <>
          <h1>Payout details</h1>
          <p safe>
            {`${session.brand.name} sees what you enter here when it pays you. A payout keeps the details you had when it was created: a change applies to payouts created afterwards.`}
          </p>
          {f.summary()}
          <form method="post" action="/portal/payout-details" class="stack">
            <CsrfField token={csrf} />
            {f.select(
              'method',
              PAYOUT_METHODS.map((m): [string, string] => [m, m]),
            )}
            {f.textarea('account', { hint: ACCOUNT_HINT, attrs: { maxlength: String(MAX_ACCOUNT_LENGTH) } })}
            <div>
              <button type="submit">Save</button>
            </div>
          </form>
        </>
      ),
    });
  };

  app.get('/payout-details', { schema: { querystring: Query({}) } }, (request, reply) => show(request, reply));

  app.post('/payout-details', { schema: { body: DetailsForm } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const method = text(request.body.method);
    const accountText = multilineText(request.body.account);
    try {
      const problems: Problem[] = [];
      if (!(PAYOUT_METHODS as readonly string[]).includes(method)) {
        problems.push({ path: 'method', message: 'choose one of the listed methods' });
      }
      if (accountText.length > MAX_ACCOUNT_LENGTH) {
        problems.push({ path: 'account', message: `must be at most ${MAX_ACCOUNT_LENGTH} characters` });
      }
      if (problems.length > 0) throw new InvalidError(problems);
      const now = ctx.clock.now();
      await ctx.db.transact((trx) =>
        trx
          .updateTable('partner_accounts')
          .set({ payout_method: method, payout_account: accountText || null, updated_at: now })
          .where('partner_id', '=', session.partner.id)
          .where('brand_id', '=', session.brand.id)
          .execute(),
      );
    } catch (error) {
      // As the postback form: back to the form as typed, each problem beside its field.
      return show(request, reply, { values: request.body, error: formError(error) });
    }
    return redirectWithFlash(reply, '/portal/payout-details', { kind: 'ok', text: 'Payout details saved.' });
  });
}
