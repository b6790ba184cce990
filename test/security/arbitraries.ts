/**
 * fast-check arbitraries for hostile requests: adversarial JSON values, bodies shaped like
 * a request schema, raw bytes and wrong content types, odd path params, query strings and
 * headers. Everything produced is something a client can really send.
 */
import fc from 'fast-check';
import type { JsonSchema } from './support.js';

/** Strings that have broken parsers, databases or templates somewhere before. */
export const NASTY_STRINGS = [
  '',
  ' ',
  '0',
  '-1',
  '1e308',
  '-0',
  'NaN',
  'Infinity',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '\u0000',
  'a\u0000b',
  '../../../etc/passwd',
  '%00',
  '%',
  "' OR '1'='1' --",
  '"; drop table offers; --',
  '<script>alert(1)</script>',
  '$' + '{jndi:ldap://x/a}',
  '{{7*7}}',
  '\u202egnp.exe',
  '\ud800',
  '\udfff\ud800',
  '😀'.repeat(300),
  'x'.repeat(10_000),
  '__proto__',
  'constructor',
  'hasOwnProperty',
  `off_${'Z'.repeat(26)}`,
  'http://[::1]:99999/',
  'javascript:alert(1)',
  'https://example.com/\r\nX-Injected: 1',
  '9999-99-99',
  '+275760-09-13',
  '2024-02-30',
];

/** Numbers at and beyond every edge: huge, negative, fractional, unsafe. */
const EDGE_NUMBERS = [0, -1, -0, 1.5, 2 ** 31, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 1e308, -1e308, 1e-308, 1e21];

/** Nested `depth` levels deep (arrays in objects in arrays…). */
export function deeplyNested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

export const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
);

export const adversarialValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  { weight: 2, arbitrary: fc.constantFrom(...EDGE_NUMBERS) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, {}, []) },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom(deeplyNested(8), deeplyNested(64), [[[[[[[[[[]]]]]]]]]]) },
  { weight: 1, arbitrary: fc.object({ maxDepth: 2 }) },
);

const DAYS = ['2024-01-01', '2024-02-30', '0000-00-00', '9999-12-31', '2024-13-01', '2024-01-01T00:00:00Z'];

/** A value that fits (or nearly fits) a schema, so requests also get past validation. */
export function plausible(schema: JsonSchema, name: string, ids: string[]): fc.Arbitrary<unknown> {
  if (/Id$|^id$|^cursor$/.test(name) && ids.length > 0) return fc.constantFrom(...ids);
  if (name === 'from' || name === 'to') return fc.constantFrom(...DAYS);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => plausible(s, name, ids)));
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'email') return fc.constantFrom('a@example.com', 'a@b', '@', 'a@example.com\u0000');
      if (schema.pattern || /url|website/i.test(name)) {
        return fc.constantFrom('https://x.example/p?c={click_id}', 'http://127.0.0.1:9/h', 'https://x.example/{nope}');
      }
      if (name === 'currency') return fc.constantFrom('USD', 'EUR', 'XYZ', 'usd', 'JPY');
      if (name === 'timezone') return fc.constantFrom('UTC', 'Europe/Berlin', 'Mars/Olympus', 'Etc/GMT+14');
      const max = typeof schema.maxLength === 'number' ? schema.maxLength : 50;
      return fc.string({ minLength: Number(schema.minLength ?? 0), maxLength: Math.min(max, 60) });
    }
    case 'integer':
      return fc.integer({ min: Number(schema.minimum ?? -1e6), max: Number(schema.maximum ?? 1e6) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? plausible(schema.items, name, ids) : fc.jsonValue(), { maxLength: 4 });
    case 'object':
      return shapedObject(schema, ids);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** An object with the schema's keys, each plausible or adversarial, plus stray keys now and then. */
export function shapedObject(schema: JsonSchema, ids: string[]): fc.Arbitrary<Record<string, unknown>> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, inner] of Object.entries(schema.properties ?? {})) {
    model[key] = fc.oneof(
      { weight: 3, arbitrary: plausible(inner, key, ids) },
      { weight: 2, arbitrary: adversarialValue },
    );
  }
  return fc
    .tuple(
      fc.record(model, { requiredKeys: [] }),
      fc.option(fc.dictionary(nastyString, adversarialValue, { maxKeys: 2 })),
    )
    .map(([known, stray]) => ({ ...(stray ?? {}), ...known }));
}

export interface RawBody {
  contentType: string | null;
  payload: string | Buffer;
}

/** Keys that pollute prototypes in careless code; spliced into the JSON text (a literal would set the prototype). */
const POLLUTION = ['"__proto__":{"polluted":"yes"}', '"constructor":{"prototype":{"polluted":"yes"}}'];

function withPollution(text: string, which: number | null): string {
  if (which === null || !text.startsWith('{')) return text;
  return `{${POLLUTION[which]}${text === '{}' ? '' : ','}${text.slice(1)}`;
}

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON'];
const WRONG_TYPES = [
  null,
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/xml',
  'application/json; charset=utf-16',
  'application/json;;;',
  'application/jsonx',
  'application/vnd.api+json',
  '*/*',
];
const BROKEN_JSON = [
  '{',
  '{"name":',
  '[1,2',
  'nul',
  '\ufeff{}',
  '{"a":1}garbage',
  '{"a":1}{"b":2}',
  '1',
  '"text"',
  'null',
  '[]',
  'true',
  '{"name":"\\ud800"}',
  '{"name":"\\u0000"}',
  '{"name":1e999}',
  '{"name":-0}',
  '   ',
  '\u0000',
  '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nb\r\n--x--\r\n',
  'name=a&email=b',
];

/** Request bodies for an operation: random JSON, schema-shaped hostile JSON, raw bytes and wrong content types. */
export function bodyArbitrary(schema: JsonSchema | null, ids: string[]): fc.Arbitrary<RawBody> {
  const json = (value: fc.Arbitrary<unknown>) =>
    fc
      .tuple(value, fc.constantFrom(...JSON_TYPES), fc.option(fc.constantFrom(0, 1), { freq: 4 }))
      .map(([v, contentType, pollution]) => ({
        contentType,
        payload: withPollution(JSON.stringify(v) ?? '', pollution),
      }));
  const raw = fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    fc.constantFrom(...BROKEN_JSON),
  );
  return fc.oneof(
    { weight: 2, arbitrary: json(fc.oneof(fc.anything(), fc.object(), fc.jsonValue())) },
    { weight: schema ? 4 : 0, arbitrary: json(shapedObject(schema ?? {}, ids)) },
    {
      weight: 1,
      arbitrary: fc.tuple(raw, fc.constantFrom(...JSON_TYPES)).map(([p, c]) => ({ contentType: c, payload: p })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.oneof(
            raw,
            json(fc.jsonValue()).map((b) => b.payload),
          ),
          fc.constantFrom(...WRONG_TYPES),
        )
        .map(([payload, contentType]) => ({ contentType, payload })),
    },
  );
}

/** Percent-encodes every UTF-8 byte (lone surrogates become U+FFFD, as a client would send them). */
export const encodeBytes = (text: string) =>
  [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

const RAW_SEGMENTS = [
  '..',
  '../',
  '../..',
  '%2e%2e',
  '..%2f..%2f',
  '%2e%2e%2f',
  '%00',
  'abc%00',
  '%',
  '%zz',
  '%ff%fe',
  ';',
  '%3f',
  '%23',
  '%2F',
];

export function pathParamArbitrary(real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...real) },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_SEGMENTS, 'x'.repeat(5000), encodeURIComponent('😀')) },
    { weight: 1, arbitrary: nastyString.map(encodeBytes) },
    { weight: 1, arbitrary: fc.constantFrom(...real).map((id) => `${id}${encodeBytes('\u0000')}`) },
  );
}

/** A query string with known and random keys, repeated keys, bracket arrays and hostile values. */
export function queryArbitrary(names: string[], known: (name: string) => fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const keys = fc.oneof(
    fc.constantFrom(...names, 'limit', 'cursor', '__proto__', 'constructor', 'a[b]', 'limit[]', ''),
    fc.string({ maxLength: 10 }),
  );
  const pair = keys.chain((key) =>
    fc
      .oneof(
        known(key).map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))),
        nastyString,
      )
      .map((value) => `${encodeBytes(key)}=${encodeBytes(value)}`),
  );
  return fc
    .tuple(fc.array(pair, { maxLength: 6 }), fc.boolean())
    .map(([pairs, repeat]) => (repeat ? [...pairs, ...pairs] : pairs).join('&'));
}

const safeHeader = (text: string) => text.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');

/** Hostile headers: odd Authorization schemes, huge values, forwarded-for garbage, cookies. */
export function headerArbitrary(apiKey: string | null): fc.Arbitrary<Record<string, string>> {
  const auth = fc.constantFrom(
    `Bearer ${'a'.repeat(100_000)}`,
    `Bearer afk_${'A'.repeat(10_000)}`,
    'Basic dXNlcjpwYXNz',
    'Bearer',
    'Bearer ',
    `Bearer\t${apiKey ?? 'afk_x'}`,
    `Bearer ${apiKey ?? 'afk_x'} ${apiKey ?? 'afk_x'}`,
    `Bearer ${apiKey ?? 'afk_x'}\u00ff`,
    `Digest ${apiKey ?? ''}`,
    `bEaReR ${apiKey ?? ''}`,
    'Bearer afk_',
    'Bearer null',
    ...(apiKey ? [`Bearer ${apiKey}`] : []),
  );
  const name = fc.constantFrom(
    'x-forwarded-for',
    'forwarded',
    'x-real-ip',
    'user-agent',
    'referer',
    'cookie',
    'accept',
    'accept-language',
    'x-request-id',
    'origin',
    'content-encoding',
    'if-none-match',
    'x-http-method-override',
  );
  const value = fc.oneof(nastyString, fc.constantFrom('affitrack_session=x; affitrack_flash=%E0%A4%A', '1.2.3.4, ::1'));
  return fc
    .tuple(fc.option(auth, { freq: 2 }), fc.dictionary(name, value.map(safeHeader), { maxKeys: 4 }))
    .map(([authorization, rest]) => ({ ...rest, ...(authorization !== null ? { authorization } : {}) }));
}
