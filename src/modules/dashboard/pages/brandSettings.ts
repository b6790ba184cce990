/** Brand settings: name, time zone, currency, fraud threshold and the auto-ban rule. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import type { BrandRow } from '../../brands/repository.js';
import { UpdateBrandBody } from '../../brands/schemas.js';
import { updateBrand } from '../../brands/service.js';
import { copyField, csrfField } from '../components.js';
import { type FormValues, FormView, field, formBody, Problems, requiredWhole, valuesOf } from '../forms.js';
import { html } from '../html.js';
import { formError, render } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { settingsTabs } from './settingsNav.js';

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
const TIME_ZONES = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
const CURRENCIES = Intl.supportedValuesOf('currency');

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

function brandInput(form: URLSearchParams) {
  const problems = new Problems();
  const enabled = field(form, 'autoBanEnabled') === '1';
  const threshold = requiredWhole(field(form, 'fraudThreshold'), 'fraudThreshold', problems);
  const clicks = enabled ? requiredWhole(field(form, 'highRiskClicks'), 'highRiskClicks', problems) : null;
  const minutes = enabled ? requiredWhole(field(form, 'windowMinutes'), 'windowMinutes', problems) : null;
  const input = {
    name: field(form, 'name'),
    timezone: field(form, 'timezone'),
    currency: field(form, 'currency'),
    fraudThreshold: threshold,
    autoBan: enabled ? { highRiskClicks: clicks, windowMinutes: minutes } : null,
  };
  problems.check(UpdateBrandBody, input);
  problems.throwIfAny();
  return input as typeof UpdateBrandBody.static;
}

export function brandSettingsPages(app: FastifyInstance, ctx: AppContext): void {
  const show = (request: FastifyRequest, reply: FastifyReply, values?: FormValues, error?: ApiError) =>
    render(ctx, request, reply, {
      title: 'Settings',
      section: 'settings',
      status: error ? error.status : 200,
      body: (session) => {
        const f = new FormView(values ?? brandValues(session.brand), LABELS, error, ALIASES);
        const list = (items: string[]) => items.map((i): [string, string] => [i, i]);
        return html`<h1>Settings</h1>${settingsTabs('general')}
<div class="cols"><section class="panel" aria-labelledby="brand-h"><h2 id="brand-h">Brand</h2>${f.summary()}
<form method="post" action="/dashboard/settings" class="stack" novalidate>${csrfField(session)}
${f.input('name', { required: true, attrs: html` maxlength="200"` })}
<div class="fields">${f.select('timezone', list(TIME_ZONES), 'Report days and caps count in it.')}${f.select('currency', list(CURRENCIES), 'Default for new offers and reports.')}</div>
${f.input('fraudThreshold', { type: 'number', attrs: html` min="0" max="100"`, hint: 'Clicks scoring above it (0–100) are high-risk.' })}
<fieldset><legend>Automatic bans</legend>
<label class="check" for="autoBanEnabled"><input type="checkbox" id="autoBanEnabled" name="autoBanEnabled" value="1"${f.value('autoBanEnabled') ? html` checked` : ''}> Ban a partner automatically after too many high-risk clicks</label>
<div class="fields">${f.input('highRiskClicks', { type: 'number', attrs: html` min="1"` })}${f.input('windowMinutes', { type: 'number', attrs: html` min="1"` })}</div></fieldset>
<div><button type="submit">Save settings</button></div></form></section>
<section class="panel" aria-labelledby="about-h"><h2 id="about-h">About this brand</h2><dl class="props"><dt>Brand id</dt><dd class="mono">${session.brand.id}</dd><dt>Slug</dt><dd class="mono">${session.brand.slug}</dd></dl>
<p>${copyField('apply-url', 'Partner application form', `${ctx.config.publicUrl}/apply/${session.brand.slug}`)}</p></section></div>`;
      },
    });

  app.get('/settings', async (request, reply) => show(request, reply));

  app.post('/settings', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    try {
      await updateBrand(ctx.db, ctx.clock, brand.id, brandInput(form));
      return redirectWithFlash(ctx, reply, '/dashboard/settings', { kind: 'ok', text: 'Settings saved.' });
    } catch (error) {
      return show(request, reply, valuesOf(form), formError(error));
    }
  });
}
