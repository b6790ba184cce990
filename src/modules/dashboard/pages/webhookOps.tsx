/**
 * Webhook operations in the dashboard (issue #20): each subscription's health and parked
 * deliveries, enabling with or without its parked deliveries, recovering failed deliveries
 * and rotating the signing secret. The same services as the API.
 */
import { escapeHtml } from '@kitajs/html';
import { addDays, isRealDay, localDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import { toIso } from '../../../clock.js';
import type { AppContext } from '../../../context.js';
import { ConflictError, InvalidError } from '../../../errors.js';
import { ALREADY_CREATED, claimForm, FORM_ID_FIELD, newFormId } from '../../../web/sentOnce.js';
import { healthOf } from '../../webhooks/health.js';
import {
  earlierSecretsOf,
  earlierSecretsSignUntil,
  findSubscription,
  type SubscriptionRow,
} from '../../webhooks/repository.js';
import type { SubscriptionHealth } from '../../webhooks/schemas.js';
import { recoverDeliveries, rotateSecret, updateSubscription } from '../../webhooks/service.js';
import { notFound } from '../errors.js';
import { count, percent } from '../format.js';
import { Field, FormBody, IdParams, text } from '../forms.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, BackLink, Badge, CsrfField, Prop, Time } from '../views/components.js';
import { SecretNotice } from './webhookForm.js';

/** Health of subscriptions as the pages show it (the API's numbers). */
export function subscriptionHealth(ctx: AppContext, rows: SubscriptionRow[]) {
  return healthOf(ctx.db.read, rows, ctx.clock.now(), ctx.config.webhookDisableAfter);
}

/** The list's health cell: success rate, failures in a row and warnings, parked deliveries. */
export function HealthCell({ health, status }: { health: SubscriptionHealth | undefined; status: string }) {
  if (!health) return <span class="muted">—</span>;
  return (
    <>
      <span safe>
        {health.successRate24h === null ? 'no attempts in 24 h' : `${percent(health.successRate24h)} ok in 24 h`}
      </span>
      {health.consecutiveFailures > 0 ? (
        <>
          <br />
          <Badge status="failed" label={`${count(health.consecutiveFailures)} failed in a row`} />
        </>
      ) : (
        ''
      )}
      {health.warning && status === 'active' ? (
        <>
          {' '}
          <Badge status="retry_scheduled" label={`${health.disableProgressPercent}% to auto-disable`} />
        </>
      ) : (
        ''
      )}
      {health.parkedDeliveries > 0 ? (
        <>
          <br />
          <Badge status="parked" label={`${count(health.parkedDeliveries)} parked`} />
        </>
      ) : (
        ''
      )}
    </>
  );
}

/** The edit page's operations panel: health, enable/disable, recover, rotate. */
export function OperationsPanel(props: {
  row: SubscriptionRow;
  health: SubscriptionHealth;
  csrf: string;
  timeZone: string;
  today: string;
}) {
  const { row, health, csrf, timeZone } = props;
  const base = `/dashboard/webhooks/${row.id}`;
  return (
    <section class="panel" aria-labelledby="ops-h">
      <h2 id="ops-h">Health and operations</h2>
      {row.status === 'disabled' ? (
        <p class="notice" role="status">
          <strong>Disabled</strong> <Time ms={row.disabled_at} timeZone={timeZone} />
          {row.disabled_reason ? <span safe>{`: ${row.disabled_reason}`}</span> : ''} New events are parked until it is
          enabled again.
        </p>
      ) : health.warning ? (
        <p class="notice" role="status" safe>
          {`Every delivery has failed lately: ${health.disableProgressPercent}% of the way to being disabled automatically.`}
        </p>
      ) : (
        ''
      )}
      <dl class="props">
        <Prop
          label="Success rate (24 h)"
          text={
            health.successRate24h === null
              ? 'no attempts'
              : `${percent(health.successRate24h)} of ${count(health.attempts24h)} attempts`
          }
        />
        <Prop label="Failed deliveries in a row" text={count(health.consecutiveFailures)} />
        <Prop label="Failing since">
          <Time ms={health.failingSince ? Date.parse(health.failingSince) : null} timeZone={timeZone} />
        </Prop>
        <Prop label="Last success">
          <Time ms={row.last_success_at} timeZone={timeZone} />
        </Prop>
        <Prop label="Last failure">
          <Time ms={row.last_failure_at} timeZone={timeZone} />
        </Prop>
        <Prop label="Parked deliveries" text={count(health.parkedDeliveries)} />
        <Prop
          label="Rate limit"
          text={row.rate_limit_per_second === null ? 'unlimited' : `${row.rate_limit_per_second} per second`}
        />
        <Prop label="Previous secret signs until">
          <Time ms={earlierSecretsSignUntil(row)} timeZone={timeZone} />
        </Prop>
      </dl>
      <div class="actions">
        {row.status === 'disabled' ? (
          <>
            <ActionButton
              csrf={csrf}
              action={`${base}/enable`}
              label={
                health.parkedDeliveries > 0 ? `Enable and send ${count(health.parkedDeliveries)} parked` : 'Enable'
              }
            />
            {health.parkedDeliveries > 0 ? (
              <ActionButton
                csrf={csrf}
                action={`${base}/enable`}
                label="Enable and discard parked"
                tone="danger"
                fields={{ discardParked: '1' }}
                confirm={`Delete the ${health.parkedDeliveries} parked deliveries? They will never be sent.`}
              />
            ) : (
              ''
            )}
          </>
        ) : (
          <ActionButton
            csrf={csrf}
            action={`/dashboard/webhooks/${row.id}/status`}
            label="Disable"
            tone="secondary"
            fields={{ status: 'disabled' }}
          />
        )}
        <ActionButton
          csrf={csrf}
          action={`${base}/rotate`}
          label="Rotate secret"
          tone="secondary"
          fields={{ [FORM_ID_FIELD]: newFormId() }}
          confirm="Make a new signing secret? The old one keeps signing deliveries for 24 hours."
        />
      </div>
      <h3 id="recover-h">Recover failed deliveries</h3>
      <form method="post" action={`${base}/recover`} class="inline-form" aria-labelledby="recover-h">
        <CsrfField token={csrf} />
        <div>
          <label for="recover-from">Created from</label>
          <input id="recover-from" name="from" type="date" required value={escapeHtml(props.today)} />
        </div>
        <div>
          <label for="recover-to">to (inclusive)</label>
          <input id="recover-to" name="to" type="date" value="" />
        </div>
        <label class="check" for="recover-dry">
          <input type="checkbox" id="recover-dry" name="dryRun" value="1" /> Only count
        </label>
        <button type="submit" class="secondary">
          Recover
        </button>
      </form>
    </section>
  );
}

const EnableForm = FormBody({ discardParked: Field });
const RecoverForm = FormBody({ from: Field, to: Field, dryRun: Field });
const RotateForm = FormBody({ formId: Field });

export function webhookOperationPages(app: DashboardApp, ctx: AppContext): void {
  app.post('/webhooks/:id/enable', { schema: { params: IdParams, body: EnableForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const discardParked = text(request.body.discardParked) === '1';
    return runAction(request, reply, `/dashboard/webhooks/${request.params.id}`, async () => {
      const row = await updateSubscription(ctx, brand.id, request.params.id, { status: 'active', discardParked });
      return discardParked
        ? `Deliveries to ${row.url} resume; the parked ones were discarded.`
        : `Deliveries to ${row.url} resume; parked ones are sent in order.`;
    });
  });

  app.post('/webhooks/:id/recover', { schema: { params: IdParams, body: RecoverForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const from = text(request.body.from);
    const to = text(request.body.to);
    const dryRun = text(request.body.dryRun) === '1';
    return runAction(request, reply, `/dashboard/webhooks/${request.params.id}`, async () => {
      if (!isRealDay(from)) throw InvalidError.at('from', 'Choose the first day to recover.');
      if (to && !isRealDay(to)) throw InvalidError.at('to', 'The last day is not a date.');
      const since = startOfLocalDay(parseDay(from), brand.timezone);
      const until = to ? startOfLocalDay(addDays(parseDay(to), 1), brand.timezone) : undefined;
      const result = await recoverDeliveries(ctx, brand.id, request.params.id, {
        since: toIso(since),
        ...(until === undefined ? {} : { until: toIso(Math.min(until, ctx.clock.now())) }),
        dryRun,
      });
      const n = `${count(result.deliveries)} failed ${result.deliveries === 1 ? 'delivery' : 'deliveries'}`;
      return dryRun ? `${n} would be sent again.` : `${n} queued again, oldest first.`;
    });
  });

  app.post('/webhooks/:id/rotate', { schema: { params: IdParams, body: RotateForm } }, async (request, reply) => {
    const { brand, userId } = sessionOf(request);
    if (!(await findSubscription(ctx.db.read, brand.id, request.params.id))) {
      return notFound(reply, request, 'subscription');
    }
    // The answer shows the new secret, so a reload posts again: a second rotation would drop
    // the old secret at once, which the receiver still verifies with for 24 hours.
    if (!(await claimForm(ctx, `dashboard:${userId}`, request.body.formId))) {
      return redirectWithFlash(reply, `/dashboard/webhooks/${request.params.id}`, {
        kind: 'error',
        text: ALREADY_CREATED('secret'),
      });
    }
    let rotated: Awaited<ReturnType<typeof rotateSecret>>;
    try {
      rotated = await rotateSecret(ctx, brand.id, request.params.id, {});
    } catch (error) {
      // Two earlier secrets still sign until the times promised for them (MAX_SIGNING_SECRETS).
      if (!(error instanceof ConflictError)) throw error;
      return redirectWithFlash(reply, `/dashboard/webhooks/${request.params.id}`, {
        kind: 'error',
        text: error.message,
      });
    }
    const { row, secret, previousSecretExpiresAt } = rotated;
    const signing = 1 + earlierSecretsOf(row).filter((e) => e.expiresAt > ctx.clock.now()).length;
    return render(request, reply, {
      title: 'New signing secret',
      section: 'webhooks',
      flash: { kind: 'ok', text: 'New signing secret made.' },
      body: () => (
        <>
          <BackLink href={`/dashboard/webhooks/${row.id}`} label="Subscription" />
          <h1>New signing secret</h1>
          <SecretNotice secret={secret} url={row.url} />
          <p>
            {previousSecretExpiresAt === null ? (
              'Deliveries are signed with the new secret only.'
            ) : (
              <>
                Until <Time ms={previousSecretExpiresAt} timeZone={brand.timezone} />, every delivery carries{' '}
                {signing === 3 ? 'three' : 'two'} signatures (<code>v1=</code> with the new secret, then with the old
                one{signing === 3 ? ' and the one an earlier rotation still promised' : ''}): switch your receiver to
                the new secret any time before then.
              </>
            )}
          </p>
          <p>
            <a class="btn" href={`/dashboard/webhooks/${row.id}`}>
              Done
            </a>
          </p>
        </>
      ),
    });
  });
}

/** Today in the brand's timezone, for the recover form's default. */
export function today(ctx: AppContext, timeZone: string): string {
  return localDay(ctx.clock.now(), timeZone);
}
