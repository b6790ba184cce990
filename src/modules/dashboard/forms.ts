/**
 * Form handling: read url-encoded fields, turn them into the API's input shapes, and show
 * the services' validation errors next to the fields with the submitted values kept.
 */
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { default as addFormatsPlugin } from 'ajv-formats';
import { ApiError, type ErrorDetail } from '../../http/errors.js';
import { minorDigits } from './format.js';
import { html, type Renderable, type SafeHtml } from './html.js';

export type FormValues = Record<string, string | string[]>;

/** The body of a dashboard POST (url-encoded); anything else reads as an empty form. */
export function formBody(body: unknown): URLSearchParams {
  return body instanceof URLSearchParams ? body : new URLSearchParams();
}

export function field(form: URLSearchParams, name: string): string {
  return (form.get(name) ?? '').trim();
}

/**
 * The API's own TypeBox schemas check the dashboard's input too (lengths, ranges, enums),
 * with the same strictness as JSON bodies, so there is one definition of a valid offer.
 */
const ajv = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, strict: false });
addFormatsPlugin.default(ajv);
const compiled = new WeakMap<TSchema, ValidateFunction>();

/** Problems of `value` against an API schema, one per field. */
export function schemaProblems(schema: TSchema, value: unknown): ErrorDetail[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  const details = (validate.errors ?? []).map((issue) => {
    const path = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    if (issue.keyword === 'required') {
      const missing = String(issue.params.missingProperty);
      return { path: path ? `${path}.${missing}` : missing, message: 'is required' };
    }
    // A union of literals (a status, an event name) reports one line per branch.
    if (issue.keyword === 'minLength' && issue.params.limit === 1) return { path, message: 'is required' };
    if (['const', 'enum', 'anyOf'].includes(issue.keyword))
      return { path, message: 'is not one of the allowed values' };
    return { path, message: issue.message ?? 'is invalid' };
  });
  return uniqueByPath(details);
}

export function validateAgainst(schema: TSchema, value: unknown): void {
  const details = schemaProblems(schema, value);
  if (details.length > 0) throw ApiError.validation(details);
}

/** One message per field: unions report each branch, which would only confuse a person. */
function uniqueByPath(details: ErrorDetail[]): ErrorDetail[] {
  const seen = new Map<string, ErrorDetail>();
  for (const d of details) if (!seen.has(d.path)) seen.set(d.path, d);
  return [...seen.values()];
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

/** `12.50` in major units → 1250 minor units; null for an empty field. */
export function parseMoney(text: string, currency: string, path: string, problems: Problems): number | null {
  if (text === '') return null;
  const digits = minorDigits(currency);
  const pattern = digits > 0 ? new RegExp(`^\\d{1,13}(\\.\\d{1,${digits}})?$`) : /^\d{1,13}$/;
  if (!pattern.test(text)) {
    problems.add(
      path,
      digits > 0 ? `must be an amount such as 12.50 (up to ${digits} decimals)` : 'must be a whole amount',
    );
    return null;
  }
  const [whole = '0', fraction = ''] = text.split('.');
  return Number(whole) * 10 ** digits + Number(fraction.padEnd(digits, '0') || '0');
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

/** A form's values, its errors by field name, and the labels used in the error summary. */
export class FormView {
  readonly errors: Record<string, string> = {};

  constructor(
    readonly values: FormValues,
    readonly labels: Record<string, string>,
    error?: ApiError,
    /** API paths that are named differently in the form (`revenueCents` → `revenue`). */
    aliases: Record<string, string> = {},
  ) {
    for (const d of error?.details ?? []) {
      const name = aliases[d.path] ?? d.path;
      this.errors[name] ??= d.message;
    }
    if (error && !error.details) this.errors[''] = error.message;
  }

  value(name: string): string {
    const v = this.values[name];
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  }

  private describedBy(name: string, hint?: string): SafeHtml {
    const ids = [hint ? `${name}-hint` : '', this.errors[name] ? `${name}-error` : ''].filter(Boolean).join(' ');
    return ids ? html` aria-describedby="${ids}"` : html``;
  }

  private after(name: string, hint?: string): SafeHtml {
    return html`${hint ? html`<p class="hint" id="${name}-hint">${hint}</p>` : ''}${
      this.errors[name] ? html`<p class="field-error" id="${name}-error">${this.errors[name]}</p>` : ''
    }`;
  }

  /** A labelled input. `attrs` are extra attributes written by our own code. */
  input(name: string, options: { type?: string; hint?: string; required?: boolean; attrs?: SafeHtml } = {}): SafeHtml {
    return html`<div><label for="${name}">${this.labels[name] ?? name}</label>
<input id="${name}" name="${name}" type="${options.type ?? 'text'}" value="${this.value(name)}"${
      options.required ? html` required` : ''
    }${this.errors[name] ? html` aria-invalid="true"` : ''}${this.describedBy(name, options.hint)}${options.attrs ?? ''}>
${this.after(name, options.hint)}</div>`;
  }

  select(name: string, options: Array<[string, string]>, hint?: string): SafeHtml {
    const current = this.value(name);
    return html`<div><label for="${name}">${this.labels[name] ?? name}</label>
<select id="${name}" name="${name}"${this.errors[name] ? html` aria-invalid="true"` : ''}${this.describedBy(name, hint)}>${options.map(
      ([value, label]) => html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`,
    )}</select>${this.after(name, hint)}</div>`;
  }

  checkboxes(name: string, options: Array<[string, string, string?]>): SafeHtml {
    const raw = this.values[name];
    const checked = new Set(Array.isArray(raw) ? raw : raw ? [raw] : []);
    return html`<fieldset id="${name}"${this.errors[name] ? html` aria-describedby="${name}-error"` : ''}><legend>${this.labels[name] ?? name}</legend>
${options.map(
  ([value, label, description], i) =>
    html`<label class="check" for="${name}-${i}"><input type="checkbox" id="${name}-${i}" name="${name}" value="${value}"${
      checked.has(value) ? html` checked` : ''
    }><span><span class="mono">${label}</span>${description ? html`<br><span class="hint">${description}</span>` : ''}</span></label>`,
)}${this.after(name)}</fieldset>`;
  }

  /** The error summary at the top of a form, each problem linking to its field. */
  summary(): SafeHtml {
    const entries = Object.entries(this.errors);
    if (entries.length === 0) return html``;
    const items: Renderable[] = entries.map(([name, message]) =>
      name === '' || !this.labels[name]
        ? html`<li>${name ? `${name}: ` : ''}${message}</li>`
        : html`<li><a href="#${name}">${this.labels[name]}</a>: ${message}</li>`,
    );
    return html`<div class="flash error" role="alert"><strong>Please correct the following:</strong><ul>${items}</ul></div>`;
  }
}

/** Field values of a submitted form, every repeated name kept as a list. */
export function valuesOf(form: URLSearchParams): FormValues {
  const values: FormValues = {};
  for (const key of new Set(form.keys())) {
    const all = form.getAll(key);
    values[key] = all.length > 1 ? all : (all[0] ?? '');
  }
  return values;
}
