/** The subscription form (URL, event checkboxes, status) and the page showing a new secret once. */
import type { ApiError } from '../../../http/errors.js';
import { FormIdField } from '../../../web/sentOnce.js';
import { type FormValues, FormView } from '../../../web/views/form.js';
import { EVENT_GROUPS } from '../../events/schemas.js';
import { isHttpUrl } from '../../urls.js';
import { eventCatalogue } from '../../webhooks/catalogue.js';
import type { SubscriptionRow } from '../../webhooks/repository.js';
import { type EditableFields, LOADED_FIELD, LoadedField, LoadedValues } from '../editedFields.js';
import { Field, FormBody, ListField, Problems, parseWhole, text } from '../forms.js';
import { CopyField, CsrfField } from '../views/components.js';

const LABELS = {
  url: 'Endpoint URL',
  events: 'Events',
  status: 'Status',
  rotateSecret: 'Signing secret',
  rateLimitPerSecond: 'Rate limit (sends per second)',
};
/** Every event, then each group's pattern, then the catalogue's names (what the API's `events` accepts). */
const EVENTS: Array<[string, string, string]> = [
  ['*', '*', 'Every event, including events added later.'],
  ...EVENT_GROUPS.map((group): [string, string, string] => [`${group}.*`, `${group}.*`, `Every ${group} event.`]),
  ...eventCatalogue().data.map((e): [string, string, string] => [e.name, e.name, e.description]),
];

export const SubscriptionForm = FormBody({
  url: Field,
  events: ListField,
  status: Field,
  rotateSecret: Field,
  rateLimitPerSecond: Field,
  formId: Field,
  [LOADED_FIELD]: LoadedField,
});

/** What the edit form sets (the secret's box is an action, not a value: editedFields.tsx). */
export const SUBSCRIPTION_FIELDS: EditableFields = ['url', 'events', 'status', 'rateLimitPerSecond'];

/** `whsec_` + 256 random bits (the webhook service makes it: the API's rotation uses the same). */
export { generateSecret } from '../../webhooks/service.js';

export function subscriptionValues(row: SubscriptionRow | null): FormValues {
  if (!row) return { url: '', events: [], status: 'active', rateLimitPerSecond: '' };
  return {
    url: row.url,
    events: JSON.parse(row.events) as string[],
    status: row.status,
    rateLimitPerSecond: row.rate_limit_per_second === null ? '' : String(row.rate_limit_per_second),
  };
}

/** URL, events and rate limit from the form; the two mistakes people make get plain-language messages. */
export function subscriptionInput(form: { url?: string; events?: string[]; rateLimitPerSecond?: string }) {
  const problems = new Problems();
  const input = {
    url: text(form.url),
    events: [...new Set(form.events ?? [])],
    rateLimitPerSecond: parseWhole(text(form.rateLimitPerSecond), 'rateLimitPerSecond', problems),
  };
  if (!isHttpUrl(input.url)) problems.add('url', 'must be an absolute http(s) URL, such as https://example.com/hooks');
  if (input.events.length === 0) problems.add('events', 'choose at least one event');
  problems.throwIfAny();
  return input;
}

export function SubscriptionFormView(props: {
  csrf: string;
  action: string;
  values: FormValues;
  error: ApiError | undefined;
  mode: 'create' | 'edit';
  /** The edit form's values as loaded: a save then changes only what was changed. */
  loaded?: FormValues;
}) {
  const f = new FormView(props.values, LABELS, props.error);
  return (
    <>
      {f.summary()}
      <form method="post" action={props.action} class="stack" novalidate>
        <CsrfField token={props.csrf} />
        {/* Creating shows a secret, and so does saving with "Generate a new secret" ticked. */}
        <FormIdField />
        {props.loaded ? <LoadedValues values={props.loaded} /> : ''}
        {f.input('url', {
          type: 'url',
          required: true,
          hint: 'Receives a signed POST for each event (https recommended).',
        })}
        {f.checkboxes('events', EVENTS)}
        {f.input('rateLimitPerSecond', {
          type: 'number',
          hint: 'At most this many deliveries a second to this endpoint (1–1000); empty for no limit.',
          attrs: { min: '1', max: '1000', step: '1', inputmode: 'numeric' },
        })}
        {props.mode === 'edit' ? (
          <>
            {f.select('status', [
              ['active', 'Active'],
              ['disabled', 'Disabled (nothing is sent; new events are parked)'],
            ])}
            <fieldset>
              <legend>Signing secret</legend>
              <label class="check" for="rotateSecret">
                <input type="checkbox" id="rotateSecret" name="rotateSecret" value="1" /> Generate a new secret (shown
                once; the old one keeps signing beside it for 24 hours)
              </label>
            </fieldset>
          </>
        ) : (
          <p class="hint">A signing secret is generated for you and shown once after saving.</p>
        )}
        <div class="actions">
          <button type="submit">{props.mode === 'create' ? 'Create subscription' : 'Save changes'}</button>
          <a href="/dashboard/webhooks">Cancel</a>
        </div>
      </form>
    </>
  );
}

export function SecretNotice({ secret, url }: { secret: string; url: string }) {
  return (
    <section class="secret" aria-labelledby="secret-h">
      <h2 id="secret-h" safe>
        Signing secret for {url}
      </h2>
      <p>
        <strong>Copy it now: it is shown only once.</strong> Verify each delivery's <code>X-Service-Signature</code>{' '}
        header with it.
      </p>
      <CopyField id="new-secret" label="Signing secret" value={secret} />
    </section>
  );
}
