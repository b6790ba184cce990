/**
 * Url-encoded bodies (@fastify/formbody) for every HTML form the service takes: the signed-in
 * areas (browserForms.ts) and the public application form.
 */
import formBody from '@fastify/formbody';
import { parse as parseQueryString } from 'fast-querystring';
import type { FastifyInstance } from 'fastify';
import { MAX_ENTRIES } from '../http/inputText.js';

/**
 * A form read no further than one field past MAX_ENTRIES, so an oversized one is refused as
 * such (inputText.ts) without parsing the rest: 100,000 fields took a second, and a sign-in
 * form is parsed before its rate limit counts the request.
 */
export function parseForm(body: string): Record<string, unknown> {
  let end = -1;
  for (let fields = 0; fields <= MAX_ENTRIES; fields++) {
    end = body.indexOf('&', end + 1);
    if (end === -1) return parseQueryString(body);
  }
  return parseQueryString(body.slice(0, end));
}

export async function formBodies(scope: FastifyInstance): Promise<void> {
  await scope.register(formBody, { parser: parseForm });
}
