/**
 * What the dashboard shows of the partner portal and the payout ledger on partner pages:
 * the Invite button (the one-time link is shown once, on the page answering the post) and
 * each partner's balance per currency.
 */
import type { AppContext } from '../../../context.js';
import { ALREADY_CREATED, claimForm, FORM_ID_FIELD, newFormId } from '../../../web/sentOnce.js';
import type { PartnerBalance } from '../../payouts/repository.js';
import { createInvite, INVITE_TTL_MS } from '../../portal/invites.js';
import { money } from '../format.js';
import { Field, FormBody, IdParams } from '../forms.js';
import { type DashboardApp, render } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, BackLink, CopyField, EmptyState, Time } from '../views/components.js';
import { num, Table } from '../views/table.js';

/** "Payable $12.50 · €3.00": what the brand owes a partner now, per currency, never summed. */
export function BalanceCell({ balances }: { balances: PartnerBalance[] }) {
  const owed = balances.filter((b) => b.payableCents + b.inPayoutCents > 0);
  if (owed.length === 0) return <span class="muted">—</span>;
  return (
    <span class="small" safe>
      {owed.map((b) => money(b.payableCents + b.inPayoutCents, b.currency)).join(' · ')}
    </span>
  );
}

/** The partner page's portal and balance panel. */
export function PartnerPortalPanel(props: {
  partnerId: string;
  active: boolean;
  csrf: string;
  balances: PartnerBalance[];
}) {
  return (
    <section class="panel" aria-labelledby="portal-h">
      <h2 id="portal-h">Partner portal and balance</h2>
      {props.active ? (
        <p>
          <ActionButton
            csrf={props.csrf}
            action={`/dashboard/partners/${props.partnerId}/invite`}
            label="Invite to partner portal"
            tone="secondary"
            fields={{ [FORM_ID_FIELD]: newFormId() }}
          />{' '}
          <span class="hint">A one-time link, valid 7 days; a new one also resets the partner's password.</span>
        </p>
      ) : (
        <p class="muted">Only active partners can be invited to the portal.</p>
      )}
      <Table
        caption="Balance per currency"
        columns={['Currency', num('Pending'), num('Payable'), num('In a payout'), num('Paid')]}
        rows={props.balances.map((b) => [
          { text: b.currency },
          { class: 'num', text: money(b.pendingCents, b.currency) },
          { class: 'num', text: money(b.payableCents, b.currency) },
          { class: 'num', text: money(b.inPayoutCents, b.currency) },
          { class: 'num', text: money(b.paidCents, b.currency) },
        ])}
        empty={
          <EmptyState title="No balance yet.">
            Amounts appear here once this partner earns from a conversion.
          </EmptyState>
        }
      />
      <p>
        <a href={`/dashboard/payouts?partnerId=${props.partnerId}`}>Payouts of this partner</a>
      </p>
    </section>
  );
}

const InviteForm = FormBody({ formId: Field });

export function partnerPortalPages(app: DashboardApp, ctx: AppContext): void {
  app.post('/partners/:id/invite', { schema: { params: IdParams, body: InviteForm } }, async (request, reply) => {
    const { brand, userId } = sessionOf(request);
    // The answer shows the link, so a reload posts again: a new invite would void the link shown.
    if (!(await claimForm(ctx, `dashboard:${userId}`, request.body.formId))) {
      return redirectWithFlash(reply, `/dashboard/partners/${request.params.id}`, {
        kind: 'error',
        text: ALREADY_CREATED('invite'),
      });
    }
    const invite = await createInvite(ctx, brand.id, request.params.id);
    const back = `/dashboard/partners/${invite.partnerId}`;
    return render(request, reply, {
      title: 'Portal invite',
      section: 'partners',
      status: 201,
      flash: { kind: 'ok', text: 'Invite created. Send this link to the partner: it is shown only now.' },
      body: () => (
        <>
          <BackLink href={back} label="Partner" />
          <h1>Partner portal invite</h1>
          <CopyField id="invite-link" label="One-time invite link" value={invite.url} />
          <p class="hint">
            Valid until <Time ms={invite.expiresAt} timeZone={brand.timezone} /> ({INVITE_TTL_MS / 86_400_000} days).
            Creating a new invite replaces this one.
          </p>
        </>
      ),
    });
  });
}
