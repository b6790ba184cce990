/**
 * Two validators, as DESIGN §2a asks: JSON bodies are checked strictly (no coercion, no
 * silent removal of unknown fields), while query strings and path params are coerced
 * (`?limit=2` is the integer 2). Both report every problem, not just the first.
 */
import { Ajv } from 'ajv';
import { default as addFormatsPlugin } from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

function makeAjv(coerceTypes: boolean | 'array') {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormatsPlugin.default(ajv);
  return ajv;
}

export function registerValidators(app: FastifyInstance): void {
  const bodyAjv = makeAjv(false);
  const paramAjv = makeAjv('array');
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
    return ajv.compile(schema);
  });
}
