/** The chaos tests' HTTP client: one JSON request against a running service, timed. */

export interface ApiResponse {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of every route, read field by field by the tests
  body: any;
  headers: Headers;
  ms: number;
}

/** One JSON request with a Bearer key; throws on network errors and after `timeoutMs`. */
export async function api(
  baseUrl: string,
  key: string | null,
  method: string,
  url: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const started = performance.now();
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: response.status, body: parsed, headers: response.headers, ms: performance.now() - started };
}

/** Throws unless `response` is `status` with the spec's error shape and `code`. */
export function assertError(response: ApiResponse, status: number, code: string, what: string): void {
  const error = response.body?.error;
  const shapeOk =
    response.status === status &&
    error?.code === code &&
    typeof error.message === 'string' &&
    error.message.length > 0 &&
    Object.keys(response.body).length === 1;
  if (!shapeOk) {
    throw new Error(`${what}: expected ${status} ${code}, got ${response.status} ${JSON.stringify(response.body)}`);
  }
}
