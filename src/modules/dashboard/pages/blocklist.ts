/** The fraud blocklist: IPs, CIDR ranges and user-agent substrings. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { addBlocklistEntry, type BlocklistRow, listBlocklist, removeBlocklistEntry } from '../../fraud/blocklist.js';
import { actionButton, csrfField, emptyState, pager } from '../components.js';
import { time } from '../format.js';
import { type FormValues, FormView, field, formBody, Problems, valuesOf } from '../forms.js';
import { html } from '../html.js';
import { formError, pathId, queryParam, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { settingsTabs } from './settingsNav.js';

const PAGE_SIZE = 50;
const MAX_VALUE_LENGTH = 512;
const TYPES: Array<[BlocklistRow['type'], string]> = [
  ['ip', 'IP address'],
  ['cidr', 'IP range (CIDR)'],
  ['userAgent', 'User-agent contains'],
];

export function blocklistPages(app: FastifyInstance, ctx: AppContext): void {
  const show = async (request: FastifyRequest, reply: FastifyReply, values?: FormValues, error?: ApiError) => {
    const { brand } = sessionOf(request);
    const cursor = queryParam(request, 'cursor') || undefined;
    const page = toPage(await listBlocklist(ctx, brand.id, { cursor, limit: PAGE_SIZE }), PAGE_SIZE, (r) => r);
    return render(ctx, request, reply, {
      title: 'Fraud blocklist',
      section: 'settings',
      status: error ? error.status : 200,
      body: (session) => {
        const f = new FormView(values ?? { type: 'ip', value: '' }, { type: 'Type', value: 'Value' }, error);
        const rows = page.data.map(
          (
            e,
          ) => html`<tr><td>${TYPES.find(([t]) => t === e.type)?.[1] ?? e.type}</td><td class="mono">${e.value}</td><td>${time(e.created_at, brand.timezone)}</td>
<td>${actionButton(session, `/dashboard/settings/blocklist/${e.id}/delete`, 'Remove', { small: true, tone: 'secondary' })}</td></tr>`,
        );
        return html`<h1>Settings</h1>${settingsTabs('blocklist')}
<p>Clicks matching an entry get the <code>blocklist_hit</code> signal (score +80).</p>
<section class="panel" aria-labelledby="add-h"><h2 id="add-h">Add an entry</h2>${f.summary()}
<form method="post" action="/dashboard/settings/blocklist" class="filters" novalidate>${csrfField(session)}
${f.select('type', TYPES)}${f.input('value', { required: true, attrs: html` maxlength="${MAX_VALUE_LENGTH}" placeholder="203.0.113.7"` })}<div><button type="submit">Add</button></div></form></section>
<div class="table-wrap">${
          rows.length === 0
            ? emptyState('The blocklist is empty')
            : html`<table><caption class="visually-hidden">Blocklist entries</caption><thead><tr><th scope="col">Type</th><th scope="col">Value</th><th scope="col">Added</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>`
        }</div>${pager('/dashboard/settings/blocklist', { cursor }, page.nextCursor)}`;
      },
    });
  };

  app.get('/settings/blocklist', async (request, reply) => show(request, reply));

  app.post('/settings/blocklist', async (request, reply) => {
    const { brand } = sessionOf(request);
    const form = formBody(request.body);
    try {
      const type = TYPES.find(([t]) => t === field(form, 'type'))?.[0];
      const value = field(form, 'value');
      const problems = new Problems();
      if (!type) problems.add('type', 'choose a type');
      if (!value || value.length > MAX_VALUE_LENGTH)
        problems.add('value', `must be 1 to ${MAX_VALUE_LENGTH} characters`);
      problems.throwIfAny();
      const entry = await addBlocklistEntry(ctx, brand.id, { type: type!, value });
      return redirectWithFlash(ctx, reply, '/dashboard/settings/blocklist', {
        kind: 'ok',
        text: `${entry.value} added to the blocklist.`,
      });
    } catch (error) {
      return show(request, reply, valuesOf(form), formError(error));
    }
  });

  app.post('/settings/blocklist/:id/delete', async (request, reply) => {
    const { brand } = sessionOf(request);
    return runAction(ctx, request, reply, '/dashboard/settings/blocklist', async () => {
      await removeBlocklistEntry(ctx, brand.id, pathId(request));
      return 'Entry removed.';
    });
  });
}
