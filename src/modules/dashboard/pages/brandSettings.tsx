/** Brand settings: name, time zone, currency, fraud threshold and the auto-ban rule. */
import type { Static } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { ISO_4217_CODES } from '../../../iso4217.js';
import { type FormValues, FormView, formError } from '../../../web/views/form.js';
import type { BrandRow } from '../../brands/repository.js';
import { UpdateBrandBody } from '../../brands/schemas.js';
import { updateBrand } from '../../brands/service.js';
import { canonicalTimeZone } from '../../validation.js';
import {
  type EditableFields,
  keepConcurrentChanges,
  LOADED_FIELD,
  LoadedField,
  LoadedValues,
} from '../editedFields.js';
import { FormBody, Problems, Query, requiredWhole, TextFields, text } from '../forms.js';
import { type DashboardApp, render } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { CopyField, CsrfField } from '../views/components.js';
import { SettingsTabs } from './settingsNav.js';

const LABELS = {
  name: 'Brand name',
  timezone: 'Time zone',
  currency: 'Currency',
  fraudThreshold: 'Fraud threshold',
  autoBanEnabled: 'Automatic bans',
  highRiskClicks: 'High-risk clicks',
  windowMinutes: 'Within (minutes)',
};
const ALIASES = { 'autoBan.highRiskClicks': 'highRiskClicks', 'autoBan.windowMinutes': 'windowMinutes' };
// Intl lists renamed zones by their old names (Asia/Calcutta): the menu offers them as stored.
const TIME_ZONES = [
  'UTC',
  ...Intl.supportedValuesOf('timeZone')
    .filter((z) => z !== 'UTC')
    .map(canonicalTimeZone)
    .sort(),
];
/**
 * ISO 4217's current codes, and the brand's own if ISO has withdrawn it since (HRK): the menu
 * shows what is stored rather than preselect another currency that a save would then set.
 */
function currencies(stored: string): string[] {
  return ISO_4217_CODES.includes(stored) ? [...ISO_4217_CODES] : [...ISO_4217_CODES, stored].sort();
}
const BrandForm = FormBody({
  ...TextFields(Object.keys(LABELS) as Array<keyof typeof LABELS>),
  [LOADED_FIELD]: LoadedField,
});
/** The auto-ban rule is one setting shown in three fields (editedFields.tsx). */
const BRAND_FIELDS: EditableFields = [
  'name',
  'timezone',
  'currency',
  'fraudThreshold',
  ['autoBanEnabled', 'highRiskClicks', 'windowMinutes'],
];

function brandValues(brand: BrandRow): FormValues {
  return {
    name: brand.name,
    timezone: brand.timezone,
    currency: brand.currency,
    fraudThreshold: String(brand.fraud_threshold),
    autoBanEnabled: brand.auto_ban_high_risk_clicks === null ? '' : '1',
    highRiskClicks: String(brand.auto_ban_high_risk_clicks ?? 5),
    windowMinutes: String(brand.auto_ban_window_minutes ?? 10),
  };
}

function brandInput(form: Static<typeof BrandForm>) {
  const problems = new Problems();
  const enabled = text(form.autoBanEnabled) === '1';
  const threshold = requiredWhole(text(form.fraudThreshold), 'fraudThreshold', problems);
  const clicks = enabled ? requiredWhole(text(form.highRiskClicks), 'highRiskClicks', problems) : null;
  const minutes = enabled ? requiredWhole(text(form.windowMinutes), 'windowMinutes', problems) : null;
  const input = {
    name: text(form.name),
    timezone: text(form.timezone),
    currency: text(form.currency),
    fraudThreshold: threshold,
    autoBan: enabled ? { highRiskClicks: clicks, windowMinutes: minutes } : null,
  };
  problems.check(UpdateBrandBody, input);
  problems.throwIfAny();
  return input as typeof UpdateBrandBody.static;
}

export function brandSettingsPages(app: DashboardApp, ctx: AppContext): void {
  const show = (request: FastifyRequest, reply: FastifyReply, values?: FormValues, error?: ApiError) =>
    render(request, reply, {
      title: 'Settings',
      section: 'settings',
      status: error ? error.status : 200,
      body: (session) => {
        const f = new FormView(values ?? brandValues(session.brand), LABELS, error, ALIASES);
        const list = (items: string[]) => items.map((i): [string, string] => [i, i]);
        return (
          <>
            <h1>Settings</h1>
            <SettingsTabs current="general" />
            <div class="cols">
              <section class="panel" aria-labelledby="brand-h">
                <h2 id="brand-h">Brand</h2>
                {f.summary()}
                <form method="post" action="/dashboard/settings" class="stack" novalidate>
                  <CsrfField token={session.csrfToken} />
                  <LoadedValues values={brandValues(session.brand)} />
                  {f.input('name', { required: true, attrs: { maxlength: '200' } })}
                  <div class="fields">
                    {f.select('timezone', list(TIME_ZONES), 'Report days and caps count in it.')}
                    {f.select(
                      'currency',
                      list(currencies(session.brand.currency)),
                      'Default for new offers and reports.',
                    )}
                  </div>
                  {f.input('fraudThreshold', {
                    type: 'number',
                    attrs: { min: '0', max: '100' },
                    hint: 'Clicks scoring above it (0–100) are high-risk.',
                  })}
                  <fieldset>
                    <legend>Automatic bans</legend>
                    <label class="check" for="autoBanEnabled">
                      <input
                        type="checkbox"
                        id="autoBanEnabled"
                        name="autoBanEnabled"
                        value="1"
                        checked={Boolean(f.value('autoBanEnabled'))}
                      />{' '}
                      Ban a partner automatically after too many high-risk clicks
                    </label>
                    <div class="fields">
                      {f.input('highRiskClicks', { type: 'number', attrs: { min: '1' } })}
                      {f.input('windowMinutes', { type: 'number', attrs: { min: '1' } })}
                    </div>
                  </fieldset>
                  <div>
                    <button type="submit">Save settings</button>
                  </div>
                </form>
              </section>
              <section class="panel" aria-labelledby="about-h">
                <h2 id="about-h">About this brand</h2>
                <dl class="props">
                  <dt>Brand id</dt>
                  <dd class="mono" safe>
                    {session.brand.id}
                  </dd>
                  <dt>Slug</dt>
                  <dd class="mono" safe>
                    {session.brand.slug}
                  </dd>
                </dl>
                <p>
                  <CopyField
                    id="apply-url"
                    label="Partner application form"
                    value={`${ctx.config.publicUrl}/apply/${session.brand.slug}`}
                  />
                </p>
              </section>
            </div>
          </>
        );
      },
    });

  app.get('/settings', { schema: { querystring: Query({}) } }, async (request, reply) => show(request, reply));

  app.post('/settings', { schema: { body: BrandForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    // Fields left as loaded keep the brand's current settings: an auto-ban rule set meanwhile stays.
    const { [LOADED_FIELD]: loaded, ...submitted } = request.body;
    const values = keepConcurrentChanges(submitted, loaded, brandValues(brand), BRAND_FIELDS) as typeof submitted;
    try {
      await updateBrand(ctx.db, ctx.clock, brand.id, brandInput(values));
      return redirectWithFlash(reply, '/dashboard/settings', { kind: 'ok', text: 'Settings saved.' });
    } catch (error) {
      return show(request, reply, values, formError(error));
    }
  });
}
