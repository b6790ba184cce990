/**
 * Small building blocks shared by the pages: badges, times, empty states, pagination, buttons.
 *
 * Escaping: text children of an element are escaped with `safe` (the XSS check of
 * `npm run typecheck` refuses them otherwise). In attribute values kitajs escapes only `"`,
 * which keeps a value inside its quotes; values that come from people are passed through
 * `escapeHtml` as well, so the page shows exactly what was stored (`&amp;` stays `&amp;`)
 * and no markup of theirs appears in the page source, even inert.
 */

import type { PropsWithChildren } from '@kitajs/html';
import { escapeHtml } from '@kitajs/html';
import { count, dateTime } from '../format.js';

const BADGE_TONES: Record<string, string> = {
  active: 'ok',
  approved: 'ok',
  succeeded: 'ok',
  pending: 'warn',
  applicant: 'info',
  paused: 'warn',
  attempting: 'info',
  retry_scheduled: 'warn',
  parked: 'warn',
  rejected: 'bad',
  banned: 'bad',
  failed: 'bad',
  revoked: 'bad',
  disabled: '',
  archived: '',
};

export function Badge({ status, label = status.replace('_', ' ') }: { status: string; label?: string }) {
  return (
    <span class={`badge ${BADGE_TONES[status] ?? ''}`} safe>
      {label}
    </span>
  );
}

/** A `<time>` element: brand-local text, the exact UTC instant in `datetime`. */
export function Time({ ms, timeZone }: { ms: number | null; timeZone: string }) {
  if (ms === null) return <span class="muted">—</span>;
  return (
    <time datetime={new Date(ms).toISOString()} safe>
      {dateTime(ms, timeZone)}
    </time>
  );
}

/** A list's first cell: when the item was created, linking to its page, with its id below. */
export function CreatedLink({ href, ms, timeZone, id }: { href: string; ms: number; timeZone: string; id: string }) {
  return (
    <>
      <a href={href}>
        <Time ms={ms} timeZone={timeZone} />
      </a>
      <br />
      <span class="muted small mono" safe>
        {id}
      </span>
    </>
  );
}

export function CsrfField({ token }: { token: string }) {
  return <input type="hidden" name="_csrf" value={token} />;
}

/**
 * A one-button form posting to `action` (no JavaScript needed). In a list, `row` names the
 * row it acts on ("Approve Jane Media"): a screen reader's list of buttons would otherwise
 * offer the same "Approve" for every row. Sighted users see `label` only.
 */
export function ActionButton(props: {
  csrf: string;
  action: string;
  label: string;
  tone?: 'secondary' | 'danger';
  confirm?: string;
  fields?: Record<string, string>;
  small?: boolean;
  row?: string;
}) {
  const classes = [props.tone, props.small ? 'small' : ''].filter(Boolean).join(' ');
  return (
    <form method="post" action={props.action} class="inline" data-confirm={props.confirm && escapeHtml(props.confirm)}>
      <CsrfField token={props.csrf} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={escapeHtml(value)} />
      ))}
      <button
        type="submit"
        class={classes}
        aria-label={props.row === undefined ? undefined : escapeHtml(`${props.label} ${props.row}`)}
        safe
      >
        {props.label}
      </button>
    </form>
  );
}

export function EmptyState({ title, children }: PropsWithChildren<{ title: string }>) {
  const text = <span>{children}</span>;
  return (
    <div class="empty">
      <strong safe>{title}</strong>
      {children === undefined ? '' : text}
    </div>
  );
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
export function Pager(props: {
  path: string;
  query: Record<string, string | undefined>;
  nextCursor: string | null;
  cursorParam?: string;
}) {
  const { path, query, nextCursor, cursorParam = 'cursor' } = props;
  const onFirst = !query[cursorParam];
  if (onFirst && !nextCursor) return '';
  return (
    <nav class="pager" aria-label="Pagination">
      {onFirst ? '' : <a href={link(path, { ...query, [cursorParam]: undefined })}>« First page</a>}
      {nextCursor ? (
        <a href={link(path, { ...query, [cursorParam]: nextCursor })} rel="next">
          Next page »
        </a>
      ) : (
        <span class="muted">Last page</span>
      )}
    </nav>
  );
}

/**
 * "First page" / "Previous page" / "Next page" links over a computed list (a report's rows:
 * they have no ids to be a cursor), by `offset`, and which rows of how many are shown, so a
 * long report never looks complete when it is not. The query (repeated parameters kept) rides
 * along; only `offset` changes.
 */
export function OffsetPager(props: {
  path: string;
  query: URLSearchParams;
  offset: number;
  pageSize: number;
  total: number;
}) {
  const { path, query, offset, pageSize, total } = props;
  const hasMore = offset + pageSize < total;
  if (offset === 0 && !hasMore) return '';
  const at = (n: number) => {
    const params = new URLSearchParams(query);
    params.delete('offset');
    if (n > 0) params.set('offset', String(n));
    return `${path}?${params}`;
  };
  const shown =
    offset < total
      ? `Rows ${count(offset + 1)}–${count(Math.min(offset + pageSize, total))} of ${count(total)}`
      : `${count(total)} rows`;
  return (
    <nav class="pager" aria-label="Pagination">
      {offset > pageSize ? <a href={at(0)}>« First page</a> : ''}
      {offset > 0 ? (
        <a href={at(Math.max(0, offset - pageSize))} rel="prev">
          ‹ Previous page
        </a>
      ) : (
        ''
      )}
      <span class="muted" safe>
        {shown}
      </span>
      {hasMore ? (
        <a href={at(offset + pageSize)} rel="next">
          Next page »
        </a>
      ) : (
        <span class="muted">Last page</span>
      )}
    </nav>
  );
}

/** A tab strip of links; the current one is marked for screen readers too. */
export function Tabs({
  label,
  items,
}: {
  label: string;
  items: Array<{ href: string; text: string; current: boolean }>;
}) {
  return (
    <nav aria-label={label}>
      <ul class="tabs">
        {items.map((i) => (
          <li>
            <a href={i.href} aria-current={i.current ? 'page' : undefined} safe>
              {i.text}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/**
 * A read-only text field with a Copy button (the button appears once the script runs), named
 * after its field for screen readers ("Copy Tracking link for Spring Sale"): a list's rows or
 * a page's fields would otherwise offer the same "Copy" each.
 */
export function CopyField(props: { id: string; label: string; value: string; visibleLabel?: boolean }) {
  return (
    <div>
      <label for={props.id} class={props.visibleLabel === false ? 'visually-hidden' : undefined} safe>
        {props.label}
      </label>
      <div class="copy">
        <input id={props.id} value={escapeHtml(props.value)} readonly spellcheck="false" />
        <button
          type="button"
          class="secondary small"
          data-copy={props.id}
          aria-label={escapeHtml(`Copy ${props.label}`)}
          hidden
        >
          Copy
        </button>
      </div>
    </div>
  );
}

/** The "« Offers" link above a detail page. */
export function BackLink({ href, label }: { href: string; label: string }) {
  return (
    <p>
      <a href={href} safe>{`« ${label}`}</a>
    </p>
  );
}

/** One entry of a details list (`<dl class="props">`): text (escaped, '—' when null) or markup. */
/** A click's or conversion's offer and partner as two linked properties. */
export function LinkProps(props: {
  row: { offer_id: string; partner_id: string };
  names: { offer: string; partner: string };
}) {
  return (
    <>
      <Prop label="Offer">
        <a href={`/dashboard/offers/${props.row.offer_id}`} safe>
          {props.names.offer}
        </a>
      </Prop>
      <Prop label="Partner">
        <a href={`/dashboard/partners/${props.row.partner_id}`} safe>
          {props.names.partner}
        </a>
      </Prop>
    </>
  );
}

export function Prop(props: PropsWithChildren<{ label: string; text?: string | null; mono?: boolean }>) {
  const className = props.mono ? 'mono' : undefined;
  const markup = <dd class={className}>{props.children}</dd>;
  return (
    <>
      <dt safe>{props.label}</dt>
      {props.text === undefined ? (
        markup
      ) : (
        <dd class={className} safe>
          {props.text ?? '—'}
        </dd>
      )}
    </>
  );
}
