/**
 * Webhook operations in the dashboard (issue #20): each subscription's health and parked
 * deliveries, enabling with or without its parked deliveries, recovering failed deliveries
 * and rotating the signing secret. The same services as the API.
 */
import { escapeHtml } from '@kitajs/html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { addDays, isRealDay, localDay, parseDay, startOfLocalDay } from '../../../calendar.js';
import { toIso } from '../../../clock.js';
import type { AppContext } from '../../../context.js';
import { ConflictError } from '../../../errors.js';
import { ALREADY_CREATED, claimForm, FORM_ID_FIELD, newFormId } from '../../../web/sentOnce.js';
import { AUTOFOCUS } from '../../../web/views/form.js';
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

/** A refused Recover form: the days as typed, and each problem under the field it is about. */
export interface RecoverRefusal {
  values: { from: string; to: string; dryRun: boolean };
  errors: { from?: string; to?: string; form?: string };
}

const RECOVER_LABELS = { from: 'Created from', to: 'to (inclusive)' } as const;

/** A day field of the Recover form, marked and described when refused. */
function RecoverDay(props: { name: 'from' | 'to'; value: string; error: string | undefined; required?: boolean }) {
  const id = `recover-${props.name}`;
  return (
    <div>
      <label for={id}>{RECOVER_LABELS[props.name]}</label>
      <input
        id={id}
        name={props.name}
        type="date"
        required={props.required}
        value={escapeHtml(props.value)}
        aria-invalid={props.error ? 'true' : undefined}
        aria-describedby={props.error ? `${id}-error` : undefined}
      />
      {props.error ? (
        <p class="field-error" id={`${id}-error`} safe>
          {props.error}
        </p>
      ) : (
        ''
      )}
    </div>
  );
}

/** The refusal's summary, in form order, each entry linking to its field. */
function RecoverSummary({ errors }: { errors: RecoverRefusal['errors'] }) {
  const entries = (['from', 'to'] as const).flatMap((name) => (errors[name] ? [[name, errors[name]] as const] : []));
  return (
    <div class="flash error" role="alert" id="recover-errors" tabindex="-1" {...AUTOFOCUS}>
      <strong>Nothing was recovered:</strong>
      <ul>
        {entries.map(([name, message]) => (
          <li>
            <a href={`#recover-${name}`}>{RECOVER_LABELS[name]}</a>: {escapeHtml(message)}
          </li>
        ))}
        {errors.form ? <li safe>{errors.form}</li> : ''}
      </ul>
    </div>
  );
}

/** The edit page's operations panel: health, enable/disable, recover, rotate. */
export function OperationsPanel(props: {
  row: SubscriptionRow;
  health: SubscriptionHealth;
  csrf: string;
  timeZone: string;
  today: string;
  /** A refused Recover form, shown again as typed. */
  recover?: RecoverRefusal;
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
      {props.recover ? <RecoverSummary errors={props.recover.errors} /> : ''}
      <form method="post" action={`${base}/recover`} class="inline-form" aria-labelledby="recover-h">
        <CsrfField token={csrf} />
        <RecoverDay
          name="from"
          required
          value={props.recover?.values.from ?? props.today}
          error={props.recover?.errors.from}
        />
        <RecoverDay name="to" value={props.recover?.values.to ?? ''} error={props.recover?.errors.to} />
        <label class="check" for="recover-dry">
          <input
            type="checkbox"
            id="recover-dry"
            name="dryRun"
            value="1"
            checked={props.recover?.values.dryRun ?? false}
          />{' '}
          Only count
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

/** The problems of the Recover form's days, in its own words (From/To, not the API's since/until). */
function recoverProblems(from: string, to: string, today: string): RecoverRefusal['errors'] {
  if (!from) return { from: 'choose the first day to recover' };
  if (!isRealDay(from)) return { from: 'is not a day of the calendar' };
  if (to && !isRealDay(to)) return { to: 'is not a day of the calendar' };
  if (from > today) return { from: 'is after today: no delivery was created then yet' };
  if (to && to < from) return { to: 'is before the first day: choose a day on or after it' };
  return {};
}

/**
 * Recover: a refused form answers 422 with the subscription's page, the days as typed and
 * each problem beside its field (not a redirect with the API's words in a flash).
 */
export function recoverRoute(
  app: DashboardApp,
  ctx: AppContext,
  showRefused: (
    request: FastifyRequest,
    reply: FastifyReply,
    row: SubscriptionRow,
    refusal: RecoverRefusal,
  ) => Promise<FastifyReply>,
): void {
  app.post('/webhooks/:id/recover', { schema: { params: IdParams, body: RecoverForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    const row = await findSubscription(ctx.db.read, brand.id, request.params.id);
    if (!row) return notFound(reply, request, 'subscription');
    const values = {
      from: text(request.body.from),
      to: text(request.body.to),
      dryRun: text(request.body.dryRun) === '1',
    };
    const { from, to, dryRun } = values;
    const errors = recoverProblems(from, to, today(ctx, brand.timezone));
    if (Object.keys(errors).length > 0) return showRefused(request, reply, row, { values, errors });
    return runAction(request, reply, `/dashboard/webhooks/${row.id}`, async () => {
      const since = startOfLocalDay(parseDay(from), brand.timezone);
      const until = to ? startOfLocalDay(addDays(parseDay(to), 1), brand.timezone) : undefined;
      const result = await recoverDeliveries(ctx, brand.id, row.id, {
        since: toIso(since),
        ...(until === undefined ? {} : { until: toIso(Math.min(until, ctx.clock.now())) }),
        dryRun,
      });
      const n = `${count(result.deliveries)} failed ${result.deliveries === 1 ? 'delivery' : 'deliveries'}`;
      return dryRun ? `${n} would be sent again.` : `${n} queued again, oldest first.`;
    });
  });
}

/** Today in the brand's timezone, for the recover form's default. */
export function today(ctx: AppContext, timeZone: string): string {
  return localDay(ctx.clock.now(), timeZone);
}
