/**
 * A tagged template for HTML that escapes every interpolated value unless it is already
 * SafeHtml (the output of another `html` template). Pages are built only with it, so a
 * value from a user, a partner or a receiver can never become markup by accident.
 */
import { escapeHtml } from '../partners/applyPage.js';

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Renderable = SafeHtml | string | number | boolean | null | undefined | readonly Renderable[];

function render(value: Renderable): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false || value === true) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Marks a string built by our own code (never from input) as markup. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

export { escapeHtml };
