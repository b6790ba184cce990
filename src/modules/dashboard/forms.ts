/**
 * Form input: the schemas of the dashboard's query strings and form bodies, and turning
 * form fields into the API's input shapes with every problem reported at once.
 *
 * A route's schema fixes the shape (known fields only, one value or a list, a bounded
 * length); a shape error is a 422 page, which only a hand-made request meets. What a field
 * must contain is the service's rule (or the API schema's), shown next to the field.
 */

import { type TLiteral, type TProperties, type TSchema, type TUnion, Type } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { isRealDay } from '../../calendar.js';
import { ApiError, type ErrorDetail } from '../../http/errors.js';
import { NOT_BLANK } from '../../http/schemas.js';
import { jsonValidator } from '../../http/validation.js';
import { type AjvIssue, explainingIssues, FORMAT_TEXT } from '../../http/validationErrors.js';
import { currencyDecimals, parseMajorUnits } from '../../money.js';

/** Longer than any field of ours needs; the services check the real limits. */
const MAX_FIELD_LENGTH = 4096;

/** A text field of a form or a query string. */
export const Field = Type.Optional(Type.String({ maxLength: MAX_FIELD_LENGTH }));
/** A field that may be sent several times (checkboxes); a form's own limit is checked with a message. */
export const ListField = Type.Optional(Type.Array(Type.String({ maxLength: MAX_FIELD_LENGTH }), { maxItems: 1000 }));
/** Text fields named `names` (a form's inputs). */
export function TextFields<N extends string>(names: readonly N[]): { [K in N]: typeof Field } {
  return Object.fromEntries(names.map((name) => [name, Field])) as { [K in N]: typeof Field };
}

/** A list's cursor (the id of the last row shown). */
export const Cursor = Type.Optional(Type.String({ maxLength: 200 }));
export const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** One of `values`, or '' (a filter menu's "All"). */
export function Choice<V extends string>(values: readonly V[]): TUnion<TLiteral<V | ''>[]> {
  return Type.Union(['' as const, ...values].map((v) => Type.Literal(v)));
}

/** A query string with only the given parameters. */
export function Query<T extends TProperties>(properties: T) {
  return Type.Object(properties, { additionalProperties: false });
}

/** A form body: its fields and the CSRF token, nothing else. */
export function FormBody<T extends TProperties>(fields: T) {
  return Type.Object({ _csrf: Field, ...fields }, { additionalProperties: false });
}

/** A field's value, trimmed ('' when absent). */
export function text(value: string | undefined): string {
  return (value ?? '').trim();
}

/**
 * A textarea's value, trimmed, with each line break as LF. A browser counts a line break as
 * one character against `maxlength` but submits it as CRLF: counted as posted, text the
 * field let in would be refused as too long. Stored as LF, so it is what the field counted.
 */
export function multilineText(value: string | undefined): string {
  return text(value).replace(/\r\n?/g, '\n');
}

/** Problems of `value` against an API schema, one per field, worded for people. */
function schemaProblems(schema: TSchema, value: unknown): ErrorDetail[] {
  const validate = jsonValidator(schema);
  return validate(value) ? [] : describeIssues(validate.errors ?? []);
}

/** Ajv's findings, one per field, worded for people. */
export function describeIssues(issues: ErrorObject[]): ErrorDetail[] {
  // As in the API's answers: "autoBan: must be null" beside a bad count would be false and name no field.
  const details = explainingIssues(issues as AjvIssue[]).map((issue) => {
    const path = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    if (issue.keyword === 'required') {
      const missing = String(issue.params.missingProperty);
      return { path: path ? `${path}.${missing}` : missing, message: 'is required' };
    }
    if (issue.keyword === 'additionalProperties') {
      const extra = String(issue.params.additionalProperty);
      return { path: path ? `${path}.${extra}` : extra, message: 'is not expected here' };
    }
    // A union of literals (a status, an event name) reports one line per branch.
    if (issue.keyword === 'minLength' && issue.params.limit === 1) return { path, message: 'is required' };
    // A name must not be blank (http/schemas.ts Label): an empty field is simply missing.
    if (issue.keyword === 'pattern' && issue.params.pattern === NOT_BLANK) {
      return { path, message: (issue as AjvIssue).data === '' ? 'is required' : 'must not be blank' };
    }
    if (issue.keyword === 'format') {
      const format = String(issue.params.format);
      return { path, message: `must be ${FORMAT_TEXT[format] ?? `in ${format} format`}` };
    }
    if (['const', 'enum', 'anyOf'].includes(issue.keyword))
      return { path, message: 'is not one of the allowed values' };
    return { path, message: issue.message ?? 'is invalid' };
  });
  // Unions report each branch, which would only confuse a person: one message per field.
  const seen = new Map<string, ErrorDetail>();
  for (const d of details) if (!seen.has(d.path)) seen.set(d.path, d);
  return [...seen.values()];
}

export function validateAgainst(schema: TSchema, value: unknown): void {
  const details = schemaProblems(schema, value);
  if (details.length > 0) throw ApiError.validation(details);
}

/** Collects parse problems of several fields, then throws them together as one 422. */
export class Problems {
  readonly details: ErrorDetail[] = [];
  add(path: string, message: string): void {
    this.details.push({ path, message });
  }
  /** Adds the API schema's objections, so one round shows every problem of the form. */
  check(schema: TSchema, value: unknown): void {
    this.details.push(...schemaProblems(schema, value));
  }
  throwIfAny(): void {
    if (this.details.length > 0) throw ApiError.validation(this.details);
  }
}

/** Digits a form accepts before the decimal point of an amount. */
const AMOUNT_WHOLE_DIGITS = 13;

/** `12.50` in major units → 1250 minor units; null for an empty field. */
export function parseMoney(text: string, currency: string, path: string, problems: Problems): number | null {
  if (text === '') return null;
  const minor = parseMajorUnits(text, currency, AMOUNT_WHOLE_DIGITS);
  if (minor === null) {
    const digits = currencyDecimals(currency);
    problems.add(
      path,
      digits > 0 ? `must be an amount such as 12.50 (up to ${digits} decimals)` : 'must be a whole amount',
    );
  }
  return minor;
}

/** A whole number field; null when empty. */
export function parseWhole(text: string, path: string, problems: Problems): number | null {
  if (text === '') return null;
  if (!/^\d{1,12}$/.test(text)) {
    problems.add(path, 'must be a whole number');
    return null;
  }
  return Number(text);
}

/** A whole number field that must be filled in. */
export function requiredWhole(text: string, path: string, problems: Problems): number | null {
  if (text === '') {
    problems.add(path, 'is required');
    return null;
  }
  return parseWhole(text, path, problems);
}

/** The From and To filters' problems, in the form's order: a day the calendar lacks, a reversed range. */
export function dayRangeProblems(from: string, to: string): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (from && !isRealDay(from)) problems.push({ path: 'from', message: 'is not a calendar date' });
  if (to && !isRealDay(to)) problems.push({ path: 'to', message: 'is not a calendar date' });
  if (problems.length === 0 && from && to && from > to)
    problems.push({ path: 'from', message: 'must not be after to' });
  return problems;
}
