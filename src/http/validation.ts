/**
 * Every validator of the app is compiled here, by the one Ajv set-up below: Fastify's route
 * schemas (API, dashboard, partner form) and the dashboard's checks of the API bodies it builds
 * from forms. Nothing else in src/ may construct Ajv (`npm run lint`: dependency-cruiser's
 * one-validator-setup rule), so formats, messages and options cannot drift apart.
 *
 * DESIGN §2a has two rules: JSON values are checked strictly (no coercion: "1000" is not an
 * integer), while text from a URL or a form is coerced (`?limit=2` is the integer 2; one
 * `by=offer` is a list of one). Ajv's `coerceTypes` is an option of an instance, read when a
 * schema is compiled, not a keyword of a schema, so the set-up is one configuration with an
 * instance per rule — the same pattern as Fastify's documented per-part coercion. One instance
 * cannot hold both rules without changing one of them:
 * - flipping the option around `compile` would break Ajv's cache, which is keyed by the schema
 *   object alone (a schema used for a body and a query string would get whichever came first);
 * - coercion happens inside each subschema's `type` check, before any other keyword runs, so no
 *   custom keyword can keep one schema strict short of re-implementing every type check;
 * - coercing text before validation (by hand, or TypeBox's Value.Convert) changes the rule:
 *   Convert turns "2.5" into the integer 2, where Ajv refuses it.
 * Tests validate with `jsonValidator` too, rather than an Ajv of their own.
 * Responses are not validated: Fastify serialises them with fast-json-stringify, which keeps
 * an Ajv of its own for its unions.
 */
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type AnySchemaObject, type ValidateFunction } from 'ajv';
import { default as addFormatsPlugin } from 'ajv-formats';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { isInstant } from '../calendar.js';
import { isHttpUrl, isHttpUrlTemplate } from '../modules/urls.js';
import { isCurrencyCode, isStoredCurrencyCode, isTimeZone } from '../modules/validation.js';

function makeAjv(coerceTypes: boolean | 'array') {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // Errors carry their schema, so a failed union can be described as a whole
    // ("must be one of …", see validationErrors.ts). Costs nothing on valid input.
    verbose: true,
  });
  addFormatsPlugin.default(ajv);
  // Checked by the schema (not later by a service) so one answer lists every problem.
  ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });
  // A URL whose macros are filled in later (an offer's destination, a postback): never in the host.
  ajv.addFormat('http-url-template', { type: 'string', validate: isHttpUrlTemplate });
  // One rule for every timestamp parameter, the same as GET /conversions?from= (calendar.ts).
  ajv.addFormat('date-time', { type: 'string', validate: isInstant });
  ajv.addFormat('currency', { type: 'string', validate: (code) => isCurrencyCode(code.toUpperCase()) });
  // Filters over stored amounts: a code withdrawn since (HRK) still finds what was stored in it.
  ajv.addFormat('currency-filter', { type: 'string', validate: isStoredCurrencyCode });
  ajv.addFormat('time-zone', { type: 'string', validate: isTimeZone });
  return ajv;
}

const jsonRules = makeAjv(false);
const textRules = makeAjv('array');

/** The API: JSON bodies strictly; query strings and path parameters as text. */
const apiValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) =>
  httpPart === 'body' ? jsonRules.compile(schema) : decimalIntegers(schema, textRules.compile(schema));

/** An integer in decimal digits (a minus allowed): not 0x10, 0b11, 1e2, 2.0, +5 or " 5". */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Ajv coerces text to an integer with `Number()`, which reads JavaScript's number syntax:
 * `?limit=0x10` was 16 and `1e2` was 100. The integer properties of a query string or path
 * are checked as decimal text first, their problems listed with the schema's others (the
 * value is left as given, so Ajv's own checks still run on the rest).
 */
function decimalIntegers(schema: TSchema, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const integers = Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
  if (integers.length === 0) return validate;
  const check = ((data: Record<string, unknown>) => {
    const problems = integers
      .filter((name) => typeof data?.[name] === 'string' && !DECIMAL_INTEGER.test(data[name] as string))
      .map((name) => ({
        instancePath: `/${name}`,
        schemaPath: `#/properties/${name}/type`,
        keyword: 'type',
        params: { type: 'integer' },
        message: 'must be integer',
        data: data[name],
        parentSchema: properties[name],
      }));
    const valid = validate(data);
    check.errors = problems.length > 0 ? [...problems, ...(validate.errors ?? [])] : validate.errors;
    return valid && problems.length === 0;
  }) as ValidateFunction;
  return check;
}

/** HTML form posts: the body is text too (`a=1&a=2`), so every part follows the text rules. */
export const formValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema }) => textRules.compile(schema);

/**
 * A strict validator of a JSON value (Ajv caches it per schema object): of a TypeBox schema,
 * or of a published JSON Schema (the webhook catalogue's, checked by the tests).
 */
export function jsonValidator(schema: TSchema | AnySchemaObject): ValidateFunction {
  return jsonRules.compile(schema);
}

export function registerValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(apiValidatorCompiler);
}
