/** The fraud blocklist: IPs, CIDR ranges and user-agent substrings. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ApiError } from '../../../http/errors.js';
import { toPage } from '../../../http/pagination.js';
import { type FormValues, FormView, formError } from '../../../web/views/form.js';
import { addBlocklistEntry, type BlocklistRow, listBlocklist, removeBlocklistEntry } from '../../fraud/blocklist.js';
import { Cursor, Field, FormBody, IdParams, Problems, Query, text } from '../forms.js';
import { type DashboardApp, render, runAction } from '../respond.js';
import { redirectWithFlash, sessionOf } from '../session.js';
import { ActionButton, CsrfField, EmptyState, Pager, Time } from '../views/components.js';
import { Table } from '../views/table.js';
import { SettingsTabs } from './settingsNav.js';

const PAGE_SIZE = 50;
const MAX_VALUE_LENGTH = 512;
const TYPES: Array<[BlocklistRow['type'], string]> = [
  ['ip', 'IP address'],
  ['cidr', 'IP range (CIDR)'],
  ['userAgent', 'User-agent contains'],
];
const EntryForm = FormBody({ type: Field, value: Field });

export function blocklistPages(app: DashboardApp, ctx: AppContext): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    cursor: string | undefined,
    values?: FormValues,
    error?: ApiError,
  ) => {
    const { brand } = sessionOf(request);
    const page = toPage(await listBlocklist(ctx, brand.id, { cursor, limit: PAGE_SIZE }), PAGE_SIZE, (r) => r);
    return render(request, reply, {
      title: 'Fraud blocklist',
      section: 'settings',
      status: error ? error.status : 200,
      body: (session) => {
        const f = new FormView(values ?? { type: 'ip', value: '' }, { type: 'Type', value: 'Value' }, error);
        return (
          <>
            <h1>Settings</h1>
            <SettingsTabs current="blocklist" />
            <p>
              Clicks matching an entry get the <code>blocklist_hit</code> signal (score +80).
            </p>
            <section class="panel" aria-labelledby="add-h">
              <h2 id="add-h">Add an entry</h2>
              {f.summary()}
              <form method="post" action="/dashboard/settings/blocklist" class="filters" novalidate>
                <CsrfField token={session.csrfToken} />
                {f.select('type', TYPES)}
                {f.input('value', {
                  required: true,
                  attrs: { maxlength: String(MAX_VALUE_LENGTH), placeholder: '203.0.113.7' },
                })}
                <div>
                  <button type="submit">Add</button>
                </div>
              </form>
            </section>
            <Table
              caption="Blocklist entries"
              columns={['Type', 'Value', 'Added', 'Actions']}
              rows={page.data.map((e) => [
                { text: TYPES.find(([t]) => t === e.type)?.[1] ?? e.type },
                { class: 'mono', text: e.value },
                { html: <Time ms={e.created_at} timeZone={brand.timezone} /> },
                {
                  html: (
                    <ActionButton
                      csrf={session.csrfToken}
                      action={`/dashboard/settings/blocklist/${e.id}/delete`}
                      label="Remove"
                      small
                      tone="secondary"
                      row={e.value}
                    />
                  ),
                },
              ])}
              empty={<EmptyState title="The blocklist is empty" />}
            />
            <Pager path="/dashboard/settings/blocklist" query={{ cursor }} nextCursor={page.nextCursor} />
          </>
        );
      },
    });
  };

  app.get('/settings/blocklist', { schema: { querystring: Query({ cursor: Cursor }) } }, async (request, reply) =>
    show(request, reply, request.query.cursor || undefined),
  );

  app.post('/settings/blocklist', { schema: { body: EntryForm } }, async (request, reply) => {
    const { brand } = sessionOf(request);
    try {
      const type = TYPES.find(([t]) => t === text(request.body.type))?.[0];
      const value = text(request.body.value);
      const problems = new Problems();
      if (!type) problems.add('type', 'choose a type');
      if (!value || value.length > MAX_VALUE_LENGTH)
        problems.add('value', `must be 1 to ${MAX_VALUE_LENGTH} characters`);
      problems.throwIfAny();
      const entry = await addBlocklistEntry(ctx, brand.id, { type: type!, value });
      return redirectWithFlash(reply, '/dashboard/settings/blocklist', {
        kind: 'ok',
        text: `${entry.value} added to the blocklist.`,
      });
    } catch (error) {
      return show(request, reply, undefined, request.body, formError(error));
    }
  });

  app.post(
    '/settings/blocklist/:id/delete',
    { schema: { params: IdParams, body: FormBody({}) } },
    async (request, reply) => {
      const { brand } = sessionOf(request);
      return runAction(request, reply, '/dashboard/settings/blocklist', async () => {
        await removeBlocklistEntry(ctx, brand.id, request.params.id);
        return 'Entry removed.';
      });
    },
  );
}
