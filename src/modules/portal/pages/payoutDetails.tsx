/** Payout details: how the partner wants to be paid (method and account text), stored for the brand. */
import { escapeHtml } from '@kitajs/html';
import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../http/errors.js';
import { Field, FormBody, Query, text } from '../../dashboard/forms.js';
import { CsrfField } from '../../dashboard/views/components.js';
import type { PortalApp } from '../respond.js';
import { renderPortal, runPortalAction } from '../respond.js';
import { partnerSessionOf } from '../web.js';

export const PAYOUT_METHODS = ['PayPal', 'Bank transfer (IBAN)', 'Wise', 'Other'] as const;
const MAX_ACCOUNT_LENGTH = 500;
const DetailsForm = FormBody({ method: Field, account: Field });

export function payoutDetailsPage(app: PortalApp, ctx: AppContext): void {
  app.get('/payout-details', { schema: { querystring: Query({}) } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    const account = await ctx.db.read
      .selectFrom('partner_accounts')
      .select(['payout_method', 'payout_account'])
      .where('partner_id', '=', session.partner.id)
      .executeTakeFirst();
    return renderPortal(request, reply, {
      title: 'Payout details',
      section: 'payout-details',
      body: (_, csrf) => (
        <>
          <h1>Payout details</h1>
          <p safe>
            {`${session.brand.name} sees what you enter here when it pays you. A payout keeps the details you had when it was created: a change applies to payouts created afterwards.`}
          </p>
          <form method="post" action="/portal/payout-details" class="stack">
            <CsrfField token={csrf} />
            <div>
              <label for="method">Method</label>
              <select id="method" name="method">
                {PAYOUT_METHODS.map((m) => (
                  <option value={escapeHtml(m)} selected={account?.payout_method === m}>
                    {m}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for="account">Account</label>
              <textarea
                id="account"
                name="account"
                rows="3"
                maxlength={String(MAX_ACCOUNT_LENGTH)}
                aria-describedby="account-hint"
                safe
              >
                {account?.payout_account ?? ''}
              </textarea>
              <p class="hint" id="account-hint">
                For example your PayPal e-mail, or IBAN and account holder.
              </p>
            </div>
            <div>
              <button type="submit">Save</button>
            </div>
          </form>
        </>
      ),
    });
  });

  app.post('/payout-details', { schema: { body: DetailsForm } }, async (request, reply) => {
    const session = partnerSessionOf(request);
    return runPortalAction(request, reply, '/portal/payout-details', async () => {
      const method = text(request.body.method);
      const accountText = text(request.body.account);
      if (!(PAYOUT_METHODS as readonly string[]).includes(method)) {
        throw ApiError.validation([{ path: 'method', message: 'choose one of the listed methods' }]);
      }
      if (accountText.length > MAX_ACCOUNT_LENGTH) {
        throw ApiError.validation([{ path: 'account', message: `must be at most ${MAX_ACCOUNT_LENGTH} characters` }]);
      }
      const now = ctx.clock.now();
      await ctx.db.transact((trx) =>
        trx
          .updateTable('partner_accounts')
          .set({ payout_method: method, payout_account: accountText || null, updated_at: now })
          .where('partner_id', '=', session.partner.id)
          .where('brand_id', '=', session.brand.id)
          .execute(),
      );
      return 'Payout details saved.';
    });
  });
}
