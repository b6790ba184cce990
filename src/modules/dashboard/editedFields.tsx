/**
 * An edit form changes only what its user changed.
 *
 * An edit form posts every field, and the services apply every field they are given: a form
 * left open for ten minutes would put back what a teammate or an integration changed
 * meanwhile (a paused offer live again, a payout or a cap reset, an auto-ban rule removed).
 *
 * So the form carries the values it was loaded with (one hidden field), and the save keeps
 * the record's current value for every field the user left as loaded. We merge rather than
 * refuse a stale form: the two changes are usually to different fields (a typo in the name
 * while someone else paused the offer), and refusing would make the marketer type the
 * edit again for nothing. Where both changed the same field, the value the marketer typed
 * and saved wins, as it would have a second later.
 *
 * A form without the hidden field (a hand-made request, a page loaded before this existed)
 * is applied as posted, as before.
 */
import { escapeHtml } from '@kitajs/html';
import { Type } from '@sinclair/typebox';
import type { FormValues } from '../../web/views/form.js';

/** The hidden field's name; `_` like `_csrf`: the form's machinery, not one of its fields. */
export const LOADED_FIELD = '_loaded';

/** Room for every field of the largest form (three URLs of up to 2,048 characters, escaped as JSON). */
const MAX_LOADED_LENGTH = 32_768;

/** The hidden field in a form body's schema. */
export const LoadedField = Type.Optional(Type.String({ maxLength: MAX_LOADED_LENGTH }));

/** The hidden field carrying `values` (the record as the form shows it). */
export function LoadedValues({ values }: { values: FormValues }) {
  return <input type="hidden" name={LOADED_FIELD} value={escapeHtml(JSON.stringify(values))} />;
}

/** A field's value as compared: an unticked checkbox is absent, a list's order does not matter. */
function comparable(value: string | string[] | undefined): string {
  if (Array.isArray(value)) return JSON.stringify([...new Set(value)].sort());
  return (value ?? '').trim();
}

function parseLoaded(json: string | undefined): FormValues | null {
  if (!json) return null;
  try {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
    return parsed as FormValues;
  } catch {
    return null;
  }
}

/**
 * A form's fields; a list is one value shown in several fields (a hold time's number and
 * unit), taken from the user or from the record as a whole, never mixed.
 */
export type EditableFields = ReadonlyArray<string | readonly string[]>;

/**
 * The fields the user changed from what the form was loaded with (`loadedJson`), a group
 * (a hold time's number and unit) wholly or not at all; null for a form without the hidden
 * field, whose every field counts as changed.
 */
export function editedFields(
  submitted: FormValues,
  loadedJson: string | undefined,
  fields: EditableFields,
): Set<string> | null {
  const loaded = parseLoaded(loadedJson);
  if (!loaded) return null;
  const edited = new Set<string>();
  for (const entry of fields) {
    const group = typeof entry === 'string' ? [entry] : entry;
    const untouched =
      group.every((field) => field in loaded) &&
      group.every((field) => comparable(submitted[field]) === comparable(loaded[field]));
    if (!untouched) for (const field of group) edited.add(field);
  }
  return edited;
}

/**
 * The values to save: `submitted` where the user changed a field from what the form was
 * loaded with (`loadedJson`), `current` (the record now) where they did not.
 */
export function keepConcurrentChanges(
  submitted: FormValues,
  loadedJson: string | undefined,
  current: FormValues,
  fields: EditableFields,
): FormValues {
  const edited = editedFields(submitted, loadedJson, fields);
  if (!edited) return submitted;
  const merged: FormValues = { ...submitted };
  for (const entry of fields) {
    for (const field of typeof entry === 'string' ? [entry] : entry)
      if (!edited.has(field)) merged[field] = current[field];
  }
  return merged;
}
