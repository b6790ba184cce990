/**
 * Form fields with their labels, hints and errors: the services' validation errors are
 * shown next to the fields, with the submitted values kept. One machinery for every form a
 * person fills in: the dashboard's, the partner portal's and the public application form.
 */
import { escapeHtml } from '@kitajs/html';
import { type ApiError, toApiError } from '../../http/errors.js';

/** A form's fields as posted (a repeated field, such as ticked boxes, is a list). */
export type FormValues = Record<string, string | string[] | undefined>;

/** A refused form, to show again with what was entered and each problem beside its field. */
export interface RefusedForm {
  values: FormValues;
  error: ApiError;
}

/** A service error a form can show next to its fields (422), or a refusal (409); others propagate. */
export function formError(error: unknown): ApiError {
  const apiError = toApiError(error);
  if (apiError.status === 422 || apiError.status === 409) return apiError;
  throw error;
}

/**
 * `autofocus` for an element that is not a field (an error summary): a global attribute in
 * HTML, which @kitajs/html types on form fields only.
 */
export const AUTOFOCUS: Record<string, boolean> = { autofocus: true };

/** Attributes written by our own code (`maxlength`, `inputmode`…). */
type ExtraAttributes = Record<string, string | boolean>;

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

  private describedBy(name: string, hint?: string): string | undefined {
    const ids = [hint ? `${name}-hint` : '', this.errors[name] ? `${name}-error` : ''].filter(Boolean).join(' ');
    return ids || undefined;
  }

  private after(name: string, hint?: string) {
    const error = this.errors[name];
    return (
      <>
        {hint ? (
          <p class="hint" id={`${name}-hint`} safe>
            {hint}
          </p>
        ) : (
          ''
        )}
        {error ? (
          <p class="field-error" id={`${name}-error`} safe>
            {error}
          </p>
        ) : (
          ''
        )}
      </>
    );
  }

  private label(name: string) {
    return (
      <label for={name} safe>
        {this.labels[name] ?? name}
      </label>
    );
  }

  /** A labelled input. */
  input(name: string, options: { type?: string; hint?: string; required?: boolean; attrs?: ExtraAttributes } = {}) {
    return (
      <div>
        {this.label(name)}
        <input
          id={name}
          name={name}
          type={options.type ?? 'text'}
          value={escapeHtml(this.value(name))}
          required={options.required}
          aria-invalid={this.errors[name] ? 'true' : undefined}
          aria-describedby={this.describedBy(name, options.hint)}
          {...options.attrs}
        />
        {this.after(name, options.hint)}
      </div>
    );
  }

  /**
   * A labelled textarea. Its text is kept as entered; the server counts a posted line break
   * as one character, as `maxlength` does (`multilineText` in dashboard/forms.ts).
   */
  textarea(name: string, options: { hint?: string; rows?: number; attrs?: ExtraAttributes } = {}) {
    return (
      <div>
        {this.label(name)}
        <textarea
          id={name}
          name={name}
          rows={String(options.rows ?? 3)}
          aria-invalid={this.errors[name] ? 'true' : undefined}
          aria-describedby={this.describedBy(name, options.hint)}
          {...options.attrs}
          safe
        >
          {this.value(name)}
        </textarea>
        {this.after(name, options.hint)}
      </div>
    );
  }

  select(name: string, options: Array<[string, string]>, hint?: string) {
    const current = this.value(name);
    return (
      <div>
        {this.label(name)}
        <select
          id={name}
          name={name}
          aria-invalid={this.errors[name] ? 'true' : undefined}
          aria-describedby={this.describedBy(name, hint)}
        >
          {options.map(([value, label]) => (
            <option value={value} selected={value === current} safe>
              {label}
            </option>
          ))}
        </select>
        {this.after(name, hint)}
      </div>
    );
  }

  checkboxes(name: string, options: Array<[string, string, string?]>) {
    const raw = this.values[name];
    const checked = new Set(Array.isArray(raw) ? raw : raw ? [raw] : []);
    return (
      <fieldset id={name} aria-describedby={this.errors[name] ? `${name}-error` : undefined}>
        <legend safe>{this.labels[name] ?? name}</legend>
        {options.map(([value, label, description], i) => (
          <label class="check" for={`${name}-${i}`}>
            <input type="checkbox" id={`${name}-${i}`} name={name} value={value} checked={checked.has(value)} />
            <span>
              <span class="mono" safe>
                {label}
              </span>
              {description ? (
                <>
                  <br />
                  <span class="hint" safe>
                    {description}
                  </span>
                </>
              ) : (
                ''
              )}
            </span>
          </label>
        ))}
        {this.after(name)}
      </fieldset>
    );
  }

  /**
   * The error summary at the top of a form, each problem linking to its field. A refused form
   * comes back with the focus on it (`autofocus`, no script needed), so keyboard and screen
   * reader users start from what went wrong rather than from the top of the page.
   */
  summary() {
    // In the order of the form (its labels are listed in that order), not the order the
    // checks ran in: a reader goes through the list and the form top to bottom together.
    const order = Object.keys(this.labels);
    const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
    const entries = Object.entries(this.errors).sort(([a], [b]) => rank(a) - rank(b));
    if (entries.length === 0) return '';
    return (
      <div class="flash error" role="alert" id="error-summary" tabindex="-1" {...AUTOFOCUS}>
        <strong>Please correct the following:</strong>
        <ul>
          {entries.map(([name, message]) =>
            name === '' || !this.labels[name] ? (
              <li safe>{name ? `${name}: ${message}` : message}</li>
            ) : (
              <li>
                <a href={`#${name}`} safe>
                  {this.labels[name]}
                </a>
                : {escapeHtml(message)}
              </li>
            ),
          )}
        </ul>
      </div>
    );
  }
}
