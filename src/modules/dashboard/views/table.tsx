/**
 * Data tables: the frame, caption and header row every list shares, and its rows. A page
 * gives each row as its cells, in column order: text (escaped here) or markup it built in
 * JSX itself (so the XSS check sees it).
 *
 * On a phone the stylesheet turns each row into a stacked card: every cell shows its
 * column's name from `data-label`, which this component gives each cell from `columns`, so
 * pages never repeat the labels. The frame scrolls sideways only when a wide table does not
 * fit; it is focusable then, so keyboard users can scroll it too.
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

/**
 * One cell of a row: `text` (escaped when rendered, `null` shows empty) or `html`, markup the
 * page built with JSX. `rowHeader` makes it the `<th scope="row">` that names its row; `span`
 * is how many columns it covers (a totals row's label across the grouping columns).
 */
export type TableCell = ({ text: string | number | null; html?: never } | { html: JSX.Element; text?: never }) & {
  class?: string;
  rowHeader?: boolean;
  span?: number;
};

/** A row: its cells in column order. */
export type TableRow = TableCell[];

function CellOf({ cell, label }: { cell: TableCell; label: string | undefined }) {
  const attributes = {
    class: cell.class,
    colspan: cell.span === undefined ? undefined : String(cell.span),
    'data-label': label,
  };
  if (cell.html !== undefined) {
    // Markup the page wrote in JSX, where the XSS check saw it.
    const html = cell.html as 'safe';
    return cell.rowHeader ? (
      <th scope="row" {...attributes}>
        {html}
      </th>
    ) : (
      <td {...attributes}>{html}</td>
    );
  }
  return cell.rowHeader ? (
    <th scope="row" {...attributes} safe>
      {cell.text ?? ''}
    </th>
  ) : (
    <td {...attributes} safe>
      {cell.text ?? ''}
    </td>
  );
}

/** A row, each cell labelled with the name of the column it starts in. */
function Row({ cells, labels }: { cells: TableRow; labels: string[] }) {
  let column = 0;
  return (
    <tr>
      {cells.map((cell) => {
        const label = labels[column];
        column += cell.span ?? 1;
        return <CellOf cell={cell} label={label} />;
      })}
    </tr>
  );
}

/** The table, or `empty` when there are no rows; `caption` is for screen readers unless shown. */
export function Table(props: {
  caption: string;
  showCaption?: boolean;
  columns?: Column[];
  rows: TableRow[];
  /** Totals rows. */
  foot?: TableRow[];
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
      <tbody>
        {rows.map((cells) => (
          <Row cells={cells} labels={labels} />
        ))}
      </tbody>
      {foot && foot.length > 0 ? (
        <tfoot>
          {foot.map((cells) => (
            <Row cells={cells} labels={labels} />
          ))}
        </tfoot>
      ) : (
        ''
      )}
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
