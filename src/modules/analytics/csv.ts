/**
 * CSV exports (`?format=csv` or `Accept: text/csv`) of reports and of the click and
 * conversion lists: a header row, then one line per row, streamed — lists are read from the
 * database a page at a time while the response is written, so an export of a million clicks
 * never sits in memory.
 */
import { Readable } from 'node:stream';
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidError } from '../../errors.js';
import { acceptsCsvOverJson } from '../../http/accept.js';

/** Rows read per database round trip while a list is exported. */
export const EXPORT_PAGE_ROWS = 500;

export const FormatQuery = {
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('csv')], {
      description: '`csv` streams every matching row as CSV with a header row (so does `Accept: text/csv`).',
    }),
  ),
};

/** `?format=csv`, or an Accept header asking for text/csv (and `?format=json` not given). */
/** A 200 that is `schema` as JSON, or CSV when asked for (the OpenAPI document lists both). */
export function JsonOrCsv<T extends TSchema>(schema: T) {
  return {
    description: 'JSON, or CSV with a header row when asked for with ?format=csv or Accept: text/csv.',
    content: {
      'application/json': { schema },
      'text/csv': { schema: Type.String({ description: 'A header row, then one line per row.' }) },
    },
  };
}

export function wantsCsv(request: FastifyRequest, format: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return acceptsCsvOverJson(request.headers.accept);
}

/**
 * A cell: quoted when needed, objects as JSON, and text starting with = + - @ (or a tab / carriage return)
 * prefixed with ' so spreadsheets never run a sub-id or a referrer as a formula. Numbers we
 * write ourselves are left as they are (a negative profit stays a number).
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return String(value);
  // An object (a conversion's metadata) as its JSON, so an export keeps it whole.
  const raw = Array.isArray(value)
    ? value.join(';')
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);
  const text = /^[=+\-@\t\r]/.test(raw) ? `'${raw}` : raw;
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function line(values: unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

async function* csvLines(columns: string[], rows: AsyncIterable<Record<string, unknown>>) {
  yield line(columns);
  for await (const row of rows) yield line(columns.map((c) => row[c]));
}

/** Sends `rows` as CSV with `columns` as the header row, as an attachment named `name`.csv. */
export function sendCsv(
  reply: FastifyReply,
  name: string,
  columns: string[],
  rows: AsyncIterable<Record<string, unknown>>,
): FastifyReply {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}.csv"`)
    .send(Readable.from(csvLines(columns, rows)));
}

/**
 * Every row of a cursor-paginated list, newest first, one page of EXPORT_PAGE_ROWS at a time.
 * `fetchPage` returns up to `limit + 1` rows after `cursor` (the list queries' contract).
 */
export async function* allPages<R extends { id: string }, T>(
  fetchPage: (cursor: string | undefined, limit: number) => Promise<R[]>,
  map: (row: R) => T,
  cursor?: string,
  pageRows = EXPORT_PAGE_ROWS,
): AsyncIterable<T> {
  let after = cursor;
  for (;;) {
    const rows = await fetchPage(after, pageRows);
    for (const row of rows.slice(0, pageRows)) yield map(row);
    if (rows.length <= pageRows) return;
    after = rows[pageRows - 1]?.id;
  }
}

/**
 * A list's CSV export streams every matching row: `limit` would have no effect, so it is
 * refused rather than ignored. Read from the URL as sent: the schema's default fills
 * `request.query.limit` in whether or not the client gave one. `cursor` is kept: it starts the
 * export after that item (the rest of an export that broke off).
 */
export function refuseCsvLimit(request: FastifyRequest): void {
  const start = request.url.indexOf('?');
  if (start === -1 || !new URLSearchParams(request.url.slice(start + 1)).has('limit')) return;
  throw InvalidError.at('query.limit', CSV_LIMIT_MESSAGE);
}
export const CSV_LIMIT_MESSAGE = 'CSV exports are not paginated: every matching row is streamed';

/** What a list's OpenAPI description says of its CSV export (refuseCsvLimit). */
export const CSV_LIST_RULES =
  'As CSV the list is not paginated: every matching row is streamed, and `limit` is 422 (`query.limit: ' +
  `${CSV_LIMIT_MESSAGE}\`). \`cursor\` still applies: the export starts after that item (newest first), ` +
  'so an export that broke off can be resumed from the id of the last row received.';

export async function* fromArray<T>(rows: T[]): AsyncIterable<T> {
  yield* rows;
}
