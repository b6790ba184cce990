/**
 * `metadata`: the client's own string → string pairs on offers, partners, conversions and
 * webhook subscriptions (Stripe's rules): at most 50 keys, keys up to 40 characters, values
 * up to 500. Stored as a JSON object in a text column; returned on every read and carried in
 * the `data` of the resource's webhook events. A create sets it; an update merges key by key,
 * an empty string removes a key and `null` removes them all.
 */
import { type Static, Type } from '@sinclair/typebox';
import { InvalidError } from '../errors.js';

export const MAX_METADATA_KEYS = 50;
const MAX_KEY_LENGTH = 40;
const MAX_VALUE_LENGTH = 500;

const Pairs = (valueMin: number, description: string) =>
  Type.Record(Type.String(), Type.String({ minLength: valueMin, maxLength: MAX_VALUE_LENGTH }), {
    maxProperties: MAX_METADATA_KEYS,
    // "__proto__" cannot be an own key of a JavaScript object built by assignment: it would be
    // dropped without a word on the way to storage, so it is refused instead.
    propertyNames: { minLength: 1, maxLength: MAX_KEY_LENGTH, not: { const: '__proto__' } },
    description,
    examples: [{ order_source: 'newsletter', crm_id: '8841' }],
  });

/** What a create takes. */
export const MetadataInput = Pairs(
  0,
  'Your own key-value pairs: at most 50 keys of up to 40 characters (not "__proto__"), string values of up to 500.',
);
/** What an update takes: pairs to merge ("" removes a key), or null to remove every key. */
export const MetadataPatch = Type.Union([
  Pairs(0, 'Pairs merged into the metadata; a key set to "" is removed.'),
  Type.Null({ description: 'Removes every key.' }),
]);
/** As returned. */
export const Metadata = Type.Record(Type.String(), Type.String(), {
  description: 'Your own key-value pairs, as set on create or update ({} when none).',
});
export type Metadata = Static<typeof Metadata>;

export function parseMetadata(text: string): Metadata {
  return JSON.parse(text) as Metadata;
}

/** The stored text for a create (empty values are not kept). */
export function metadataText(input: Metadata | undefined): string {
  return mergedMetadata('{}', input);
}

/** The stored text after an update; over 50 keys in all is refused. */
export function mergedMetadata(current: string, patch: Metadata | null | undefined): string {
  if (patch === undefined) return current;
  const merged: Metadata = patch === null ? {} : { ...parseMetadata(current) };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === '') delete merged[key];
    else merged[key] = value;
  }
  if (Object.keys(merged).length > MAX_METADATA_KEYS) {
    throw InvalidError.at('metadata', `may hold at most ${MAX_METADATA_KEYS} keys in all`);
  }
  return JSON.stringify(merged);
}
