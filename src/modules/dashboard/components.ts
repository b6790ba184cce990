/** Small building blocks shared by the pages: badges, empty states, pagination, buttons. */
import type { DashboardSession } from '../users/sessions.js';
import { html, type Renderable, type SafeHtml } from './html.js';

const BADGE_TONES: Record<string, string> = {
  active: 'ok',
  approved: 'ok',
  succeeded: 'ok',
  pending: 'warn',
  applicant: 'info',
  paused: 'warn',
  attempting: 'info',
  retry_scheduled: 'warn',
  rejected: 'bad',
  banned: 'bad',
  failed: 'bad',
  revoked: 'bad',
  disabled: '',
  archived: '',
};

export function badge(status: string, label: string = status.replace('_', ' ')): SafeHtml {
  return html`<span class="badge ${BADGE_TONES[status] ?? ''}">${label}</span>`;
}

export function csrfField(session: DashboardSession): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}

/** A one-button form posting to `action` (no JavaScript needed). */
export function actionButton(
  session: DashboardSession,
  action: string,
  label: string,
  options: { tone?: 'secondary' | 'danger'; confirm?: string; fields?: Record<string, string>; small?: boolean } = {},
): SafeHtml {
  const hidden = Object.entries(options.fields ?? {}).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  );
  const classes = [options.tone, options.small ? 'small' : ''].filter(Boolean).join(' ');
  return html`<form method="post" action="${action}" class="inline"${options.confirm ? html` data-confirm="${options.confirm}"` : ''}>${csrfField(session)}${hidden}<button type="submit" class="${classes}">${label}</button></form>`;
}

export function emptyState(title: string, text: Renderable = ''): SafeHtml {
  return html`<div class="empty"><strong>${title}</strong>${text ? html`<span>${text}</span>` : ''}</div>`;
}

/** Builds `path?query` from the non-empty entries of `query`. */
export function link(path: string, query: Record<string, string | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/**
 * "First page" / "Next page" links over the services' cursors (ids, newest first). The
 * current filters ride along; only the cursor changes.
 */
export function pager(
  path: string,
  query: Record<string, string | undefined>,
  nextCursor: string | null,
  cursorParam = 'cursor',
): SafeHtml {
  const onFirst = !query[cursorParam];
  if (onFirst && !nextCursor) return html``;
  const first = onFirst
    ? html``
    : html`<a href="${link(path, { ...query, [cursorParam]: undefined })}">« First page</a>`;
  const next = nextCursor
    ? html`<a href="${link(path, { ...query, [cursorParam]: nextCursor })}" rel="next">Next page »</a>`
    : html`<span class="muted">Last page</span>`;
  return html`<nav class="pager" aria-label="Pagination">${first}${next}</nav>`;
}

/** A tab strip of links; the current one is marked for screen readers too. */
export function tabs(label: string, items: Array<{ href: string; text: string; current: boolean }>): SafeHtml {
  return html`<nav aria-label="${label}"><ul class="tabs">${items.map(
    (i) => html`<li><a href="${i.href}"${i.current ? html` aria-current="page"` : ''}>${i.text}</a></li>`,
  )}</ul></nav>`;
}

/** A read-only text field with a Copy button (the button appears once the script runs). */
export function copyField(id: string, label: string, value: string, options: { visibleLabel?: boolean } = {}) {
  return html`<div><label for="${id}"${options.visibleLabel === false ? html` class="visually-hidden"` : ''}>${label}</label>
<div class="copy"><input id="${id}" value="${value}" readonly spellcheck="false"><button type="button" class="secondary small" data-copy="${id}" hidden>Copy</button></div></div>`;
}
