/**
 * Cursor pagination, newest first. Ids are time-sortable, so the cursor is simply the id
 * of the last item returned: a list query asks for `id < cursor`, ordered by id
 * descending, one row more than the page to learn whether another page exists.
 */
export const DEFAULT_PAGE_SIZE = 50;

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export function pageSize(limit: number | undefined): number {
  return limit ?? DEFAULT_PAGE_SIZE;
}

/** Turns `limit + 1` rows into a page. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T): Page<T> {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  return { data: pageRows.map(map), nextCursor: more ? (pageRows[pageRows.length - 1]?.id ?? null) : null };
}
