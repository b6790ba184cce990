/**
 * Real HTTP for the API-contract tests: the test app listens on a loopback port and is called
 * with fetch, as a client library would (headers, status lines and bodies on the wire).
 */
import type { AddressInfo } from 'node:net';
import type { JsonBody, TestEnv } from '../helpers.js';

export interface WireResponse {
  status: number;
  body: JsonBody;
  headers: Headers;
}

export interface WireClient {
  base: string;
  call(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<WireResponse>;
}

export async function listen(env: TestEnv): Promise<WireClient> {
  await env.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = env.app.server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    async call(method, path, options = {}) {
      const key = options.key === undefined ? env.brand.apiKey : options.key;
      const headers: Record<string, string> = { ...options.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let payload: string | undefined = options.raw;
      if (options.body !== undefined) payload = JSON.stringify(options.body);
      if (payload !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(`${base}${path}`, { method, headers, body: payload, redirect: 'manual' });
      const text = await response.text();
      const json = (response.headers.get('content-type') ?? '').includes('json') && text !== '';
      return { status: response.status, body: json ? JSON.parse(text) : text, headers: response.headers };
    },
  };
}
