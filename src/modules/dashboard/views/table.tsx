/**
 * Data tables: the frame, caption and header row every list shares, and a text cell. Rows
 * stay JSX written by each page (so the XSS check sees them); text cells escape.
 *
 * On a phone the stylesheet turns each row into a stacked card: every cell shows its
 * column's name from `data-label`, which this component adds to the rows' cells in column
 * order, so pages never repeat the labels. The frame scrolls sideways only when a wide
 * table does not fit; it is focusable then, so keyboard users can scroll it too.
 */
import { escapeHtml } from '@kitajs/html';

/**
 * A column header; numbers are right-aligned; `head` replaces the header's text (a "select
 * all" box): markup the page built, already escaped.
 */
export type Column = string | { label: string; num?: boolean; head?: JSX.Element };

export function num(label: string): Column {
  return { label, num: true };
}

const labelOf = (c: Column) => (typeof c === 'string' ? c : c.label);

/** Adds `data-label` to the top-level cells of one rendered row, in column order. */
function labelCells(row: JSX.Element, labels: string[]): JSX.Element {
  if (typeof row !== 'string') return row;
  let index = 0;
  return row.replace(/<(td|th)(?=[\s>])([^>]*)>/g, (tag, name: string, attributes: string) => {
    const label = labels[index];
    index += Number(/colspan="(\d+)"/.exec(attributes)?.[1] ?? 1);
    return label ? `<${name}${attributes} data-label="${escapeHtml(label)}">` : tag;
  });
}

/** The table, or `empty` when there are no rows; `caption` is for screen readers unless shown. */
export function Table(props: {
  caption: string;
  showCaption?: boolean;
  columns?: Column[];
  rows: JSX.Element[];
  /** A totals row. */
  foot?: JSX.Element;
  empty?: JSX.Element;
  /** Extra class on the frame (`wide`: long URLs wrap instead of widening the table). */
  class?: string;
}) {
  const { rows, foot, empty, columns } = props;
  const labels = columns?.map(labelOf) ?? [];
  const table = (
    <table class={columns ? 'stack' : undefined}>
      <caption class={props.showCaption ? undefined : 'visually-hidden'} safe>
        {props.caption}
      </caption>
      {columns ? (
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === 'string' ? (
                <th scope="col" safe>
                  {c}
                </th>
              ) : (
                <th scope="col" class={c.num ? 'num' : undefined}>
                  {c.head === undefined ? <span safe>{c.label}</span> : (c.head as 'safe')}
                </th>
              ),
            )}
          </tr>
        </thead>
      ) : (
        ''
      )}
      <tbody>{columns ? rows.map((r) => labelCells(r, labels)) : rows}</tbody>
      {foot ? <tfoot>{columns ? labelCells(foot, labels) : foot}</tfoot> : ''}
    </table>
  );
  const frameClass = ['table-wrap', props.class].filter(Boolean).join(' ');
  if (rows.length === 0 && empty) return <div class={frameClass}>{empty}</div>;
  return (
    <section class={frameClass} aria-label={escapeHtml(props.caption)} tabindex="0">
      {table}
    </section>
  );
}

/** A cell of text (escaped), e.g. `<Cell class="num" text={money(…)} />`. */
export function Cell(props: { text: string | number | null; class?: string }) {
  return (
    <td class={props.class} safe>
      {props.text ?? ''}
    </td>
  );
}
