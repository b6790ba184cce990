/**
 * Data tables: the scrolling frame, caption and header row every list shares, and a text
 * cell. Rows stay JSX written by each page (so the XSS check sees them); text cells escape.
 */

/** A column header; numbers are right-aligned. */
export type Column = string | { label: string; num: true };

export function num(label: string): Column {
  return { label, num: true };
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
}) {
  const { rows, foot, empty } = props;
  const table = (
    <table>
      <caption class={props.showCaption ? undefined : 'visually-hidden'} safe>
        {props.caption}
      </caption>
      {props.columns ? (
        <thead>
          <tr>
            {props.columns.map((c) =>
              typeof c === 'string' ? (
                <th scope="col" safe>
                  {c}
                </th>
              ) : (
                <th scope="col" class="num" safe>
                  {c.label}
                </th>
              ),
            )}
          </tr>
        </thead>
      ) : (
        ''
      )}
      <tbody>{rows}</tbody>
      {foot ? <tfoot>{foot}</tfoot> : ''}
    </table>
  );
  return <div class="table-wrap">{rows.length === 0 && empty ? empty : table}</div>;
}

/** A cell of text (escaped), e.g. `<Cell class="num" text={money(…)} />`. */
export function Cell(props: { text: string | number | null; class?: string }) {
  return (
    <td class={props.class} safe>
      {props.text ?? ''}
    </td>
  );
}
