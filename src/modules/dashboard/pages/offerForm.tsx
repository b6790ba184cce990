/** The offer form: fields ↔ the API's offer body, in major units and friendly hold units. */
import type { Static } from '@sinclair/typebox';
import type { ApiError } from '../../../http/errors.js';
import { formatMajorUnits } from '../../../money.js';
import { type FormValues, FormView } from '../../../web/views/form.js';
import type { OfferRow } from '../../offers/repository.js';
import { CreateOfferBody, UpdateOfferBody } from '../../offers/schemas.js';
import { isCurrencyCode } from '../../validation.js';
import { type EditableFields, LOADED_FIELD, LoadedField, LoadedValues } from '../editedFields.js';
import { FormBody, Problems, parseMoney, parseWhole, TextFields, text } from '../forms.js';
import { CsrfField } from '../views/components.js';

const LABELS = {
  name: 'Name',
  destinationUrl: 'Destination URL',
  status: 'Status',
  currency: 'Currency',
  revenue: 'Revenue per conversion',
  payout: 'Partner payout per conversion',
  conversionStatus: 'Start status of new conversions',
  holdValue: 'Approve automatically after',
  holdUnit: 'Unit',
  capDaily: 'Daily cap',
  capWeekly: 'Weekly cap',
  capMonthly: 'Monthly cap',
  capGlobal: 'Lifetime cap',
  fallbackUrl: 'Fallback URL',
};

export const OfferForm = FormBody({
  ...TextFields(Object.keys(LABELS) as Array<keyof typeof LABELS>),
  [LOADED_FIELD]: LoadedField,
});

/** The edit form's fields, the hold time's number and unit as one (editedFields.tsx). */
export const OFFER_FIELDS: EditableFields = [
  ...Object.keys(LABELS).filter((name) => name !== 'holdValue' && name !== 'holdUnit'),
  ['holdValue', 'holdUnit'],
];
type OfferForm = Static<typeof OfferForm>;

const ALIASES: Record<string, string> = {
  revenueCents: 'revenue',
  payoutCents: 'payout',
  holdSeconds: 'holdValue',
  'caps.daily': 'capDaily',
  'caps.weekly': 'capWeekly',
  'caps.monthly': 'capMonthly',
  'caps.global': 'capGlobal',
};

const HOLD_UNITS: Array<[string, string, number]> = [
  ['days', 'days', 86_400],
  ['hours', 'hours', 3600],
  ['minutes', 'minutes', 60],
  ['seconds', 'seconds', 1],
];

/** The form's values for an existing offer (or the defaults of a new one). */
export function offerValues(row: OfferRow | null, brandCurrency: string): FormValues {
  if (!row) return { status: 'active', currency: brandCurrency, conversionStatus: 'pending', holdUnit: 'days' };
  const unit = row.hold_seconds === null ? HOLD_UNITS[0] : HOLD_UNITS.find(([, , s]) => row.hold_seconds! % s === 0);
  const cap = (n: number | null) => (n === null ? '' : String(n));
  return {
    name: row.name,
    destinationUrl: row.destination_url,
    status: row.status,
    currency: row.currency,
    revenue: formatMajorUnits(row.revenue_cents, row.currency),
    payout: formatMajorUnits(row.payout_cents, row.currency),
    conversionStatus: row.conversion_status,
    holdValue: row.hold_seconds === null ? '' : String(row.hold_seconds / (unit?.[2] ?? 1)),
    holdUnit: unit?.[0] ?? 'seconds',
    capDaily: cap(row.cap_daily),
    capWeekly: cap(row.cap_weekly),
    capMonthly: cap(row.cap_monthly),
    capGlobal: cap(row.cap_global),
    fallbackUrl: row.fallback_url ?? '',
  };
}

/** The form read into the API's body's shape, each parse problem noted in `problems`. */
function readOfferForm(form: OfferForm, brandCurrency: string, problems: Problems) {
  const currency = text(form.currency).toUpperCase();
  const moneyCurrency = isCurrencyCode(currency) ? currency : brandCurrency;
  const unit = HOLD_UNITS.find(([key]) => key === text(form.holdUnit))?.[2] ?? 1;
  const hold = parseWhole(text(form.holdValue), 'holdValue', problems);
  return {
    name: text(form.name),
    destinationUrl: text(form.destinationUrl),
    status: text(form.status),
    currency,
    revenueCents: parseMoney(text(form.revenue) || '0', moneyCurrency, 'revenue', problems) ?? 0,
    payoutCents: parseMoney(text(form.payout) || '0', moneyCurrency, 'payout', problems) ?? 0,
    conversionStatus: text(form.conversionStatus),
    holdSeconds: hold === null ? null : hold * unit,
    caps: {
      daily: parseWhole(text(form.capDaily), 'capDaily', problems),
      weekly: parseWhole(text(form.capWeekly), 'capWeekly', problems),
      monthly: parseWhole(text(form.capMonthly), 'capMonthly', problems),
      global: parseWhole(text(form.capGlobal), 'capGlobal', problems),
    },
    fallbackUrl: text(form.fallbackUrl) || null,
  };
}

/** Reads the form into the API's body; the API schema then checks it exactly as for JSON. */
export function offerInput(form: OfferForm, brandCurrency: string): CreateOfferBody {
  const problems = new Problems();
  const input = readOfferForm(form, brandCurrency, problems);
  problems.check(CreateOfferBody, input);
  problems.throwIfAny();
  return input as CreateOfferBody;
}

type PatchKey = Exclude<keyof UpdateOfferBody, 'metadata' | 'caps'>;
/** Where each form field goes in the API's body. */
const PATCH_KEYS: Record<string, PatchKey | `caps.${'daily' | 'weekly' | 'monthly' | 'global'}`> = {
  name: 'name',
  destinationUrl: 'destinationUrl',
  status: 'status',
  currency: 'currency',
  revenue: 'revenueCents',
  payout: 'payoutCents',
  conversionStatus: 'conversionStatus',
  holdValue: 'holdSeconds',
  holdUnit: 'holdSeconds',
  capDaily: 'caps.daily',
  capWeekly: 'caps.weekly',
  capMonthly: 'caps.monthly',
  capGlobal: 'caps.global',
  fallbackUrl: 'fallbackUrl',
};

/**
 * The edit form read into a PATCH of the fields its user changed (`edited`), so a field left
 * as loaded is neither checked nor written again: an offer stored in a currency ISO has since
 * withdrawn (HRK) can be renamed, though its currency would be refused as input. A new
 * currency takes the amounts shown beside it, read in that currency, as the form reads them.
 */
export function offerPatch(form: OfferForm, brandCurrency: string, edited: Set<string>): UpdateOfferBody {
  const problems = new Problems();
  const full = readOfferForm(form, brandCurrency, problems);
  const fields = new Set(edited);
  if (fields.has('currency')) for (const field of ['revenue', 'payout']) fields.add(field);
  const patch: Record<string, unknown> = {};
  const caps: Record<string, number | null> = {};
  for (const field of fields) {
    const key = PATCH_KEYS[field];
    if (!key) continue;
    if (key.startsWith('caps.')) {
      const cap = key.slice('caps.'.length) as keyof typeof full.caps;
      caps[cap] = full.caps[cap];
    } else patch[key] = full[key as PatchKey & keyof typeof full];
  }
  if (Object.keys(caps).length > 0) patch.caps = caps;
  const kept = new Problems();
  for (const d of problems.details) if (fields.has(d.path)) kept.add(d.path, d.message);
  kept.check(UpdateOfferBody, patch);
  kept.throwIfAny();
  return patch as UpdateOfferBody;
}

export function OfferFormView(props: {
  csrf: string;
  action: string;
  values: FormValues;
  error: ApiError | undefined;
  submitLabel: string;
  /** An edit form's values as loaded: a save then changes only what was changed (editedFields.tsx). */
  loaded?: FormValues;
}) {
  const f = new FormView(props.values, LABELS, props.error, ALIASES);
  const numeric = { inputmode: 'numeric' };
  return (
    <>
      {f.summary()}
      <form method="post" action={props.action} class="stack" novalidate>
        <CsrfField token={props.csrf} />
        {props.loaded ? <LoadedValues values={props.loaded} /> : ''}
        {f.input('name', { required: true, attrs: { maxlength: '200' } })}
        {f.input('destinationUrl', {
          type: 'url',
          required: true,
          hint: 'Macros: {click_id} {partner_id} {offer_id} {sub1}…{sub5}',
        })}
        <div class="fields">
          {f.select('status', [
            ['active', 'Active'],
            ['paused', 'Paused'],
            ['archived', 'Archived'],
          ])}
          {f.input('currency', { hint: 'ISO 4217, e.g. EUR', attrs: { maxlength: '3', autocapitalize: 'characters' } })}
        </div>
        <div class="fields">
          {f.input('revenue', { attrs: { inputmode: 'decimal' }, hint: 'Default, in major units (12.50)' })}
          {f.input('payout', { attrs: { inputmode: 'decimal' }, hint: 'Default, in major units' })}
        </div>
        <fieldset>
          <legend>Approval</legend>
          {f.select('conversionStatus', [
            ['pending', 'Pending (reviewed)'],
            ['approved', 'Approved'],
          ])}
          <div class="fields">
            {f.input('holdValue', {
              attrs: numeric,
              hint: 'Pending conversions only; empty = manual approval only.',
            })}
            {f.select(
              'holdUnit',
              HOLD_UNITS.map(([key, label]) => [key, label]),
            )}
          </div>
        </fieldset>
        <fieldset>
          <legend>Caps</legend>
          <p class="hint">
            Conversions per period, counted in the brand time zone (weeks start on Monday). Empty = no cap.
          </p>
          <div class="fields">
            {f.input('capDaily', { attrs: numeric })}
            {f.input('capWeekly', { attrs: numeric })}
            {f.input('capMonthly', { attrs: numeric })}
            {f.input('capGlobal', { attrs: numeric })}
          </div>
          {f.input('fallbackUrl', {
            type: 'url',
            hint: 'Where clicks go while a cap is reached; empty = clicks keep going to the destination URL.',
          })}
        </fieldset>
        <div class="actions">
          <button type="submit" safe>
            {props.submitLabel}
          </button>
          <a href="/dashboard/offers">Cancel</a>
        </div>
      </form>
    </>
  );
}
