/**
 * A test env served on a real loopback port, and a JSON client over fetch: the payout and
 * partner-API tests speak real HTTP, as clients do (parallel requests really run in parallel).
 */
import type { AddressInfo } from 'node:net';
import type { Dialect } from '../../src/db/database.js';
import { createTestEnv, type JsonBody, type TestEnv, type TestEnvOptions } from '../helpers.js';

export interface HttpResponse {
  status: number;
  body: JsonBody;
  text: string;
  headers: Headers;
}

export interface HttpEnv extends TestEnv {
  base: string;
  http(
    method: string,
    path: string,
    options?: { body?: unknown; key?: string | null; headers?: Record<string, string> },
  ): Promise<HttpResponse>;
}

export async function createHttpEnv(dialect: Dialect, options: TestEnvOptions = {}): Promise<HttpEnv> {
  const env = await createTestEnv(dialect, options);
  await env.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
  return Object.assign(env, {
    base,
    async http(
      method: string,
      path: string,
      o: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
    ): Promise<HttpResponse> {
      const key = o.key === undefined ? env.brand.apiKey : o.key;
      const headers: Record<string, string> = { 'content-type': 'application/json', ...o.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      const response = await fetch(`${base}${path}`, {
        method,
        headers,
        body: o.body === undefined ? undefined : JSON.stringify(o.body),
      });
      const text = await response.text();
      const isJson = (response.headers.get('content-type') ?? '').includes('json');
      return {
        status: response.status,
        body: isJson && text ? JSON.parse(text) : text,
        text,
        headers: response.headers,
      };
    },
  });
}
