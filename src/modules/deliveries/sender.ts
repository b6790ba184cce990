/**
 * One HTTP attempt: POST the stored body with the spec's headers, under a hard total
 * time-out (connect + headers + body), following no redirects, reading at most
 * RESPONSE_BODY_LIMIT bytes of the answer. Never throws: every outcome is data.
 */
import { Agent, request } from 'undici';
import { assertLiteralAllowed, guardedLookup } from './ssrf.js';
import type { OutgoingRequest } from './target.js';

/** Bytes of a receiver's answer kept for the delivery log (spec: the first 16 KiB). */
export const RESPONSE_BODY_LIMIT = 16 * 1024;

/** What an attempt sent, as the delivery log shows it (the body is the event's stored payload). */
export interface SentRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
}

export interface AttemptOutcome {
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
  /** The receiver's response headers; null when no answer came. */
  responseHeaders?: Record<string, string> | null;
  /** The request as sent; absent when nothing was sent (a delivery given up on). */
  request?: SentRequest;
}

export class Sender {
  private readonly agent: Agent;

  constructor(
    private readonly timeoutMs: number,
    private readonly allowPrivate: boolean,
  ) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(allowPrivate), timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 4000,
      connections: 256,
    });
  }

  async send(outgoing: OutgoingRequest): Promise<AttemptOutcome> {
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    const elapsed = () => Math.round(performance.now() - started);
    // The log names headers in lower case, as Node presents them (their case on the wire is the target's).
    const headers = Object.fromEntries(
      Object.entries(outgoing.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const sent: SentRequest = { url: outgoing.url, method: outgoing.method, headers };
    try {
      const url = new URL(outgoing.url);
      assertLiteralAllowed(url, this.allowPrivate);
      const response = await request(url, {
        method: outgoing.method,
        headers: outgoing.headers,
        body: outgoing.body,
        dispatcher: this.agent,
        signal: controller.signal,
      });
      const responseBody = await readCapped(response.body);
      return {
        statusCode: response.statusCode,
        latencyMs: elapsed(),
        responseBody,
        error: null,
        responseHeaders: flattenHeaders(response.headers),
        request: sent,
      };
    } catch (error) {
      const message = describe(error, controller.signal);
      return { statusCode: null, latencyMs: elapsed(), responseBody: null, error: message, request: sent };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Repeated headers (set-cookie…) joined with ", ", as HTTP allows for display. */
function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_BODY_LIMIT) {
      // Enough for the log: stop reading rather than download a huge answer.
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8');
}

function describe(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return String((signal.reason as Error)?.message ?? 'timed out');
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code;
  // OpenSSL messages end with a newline and carry its source path: keep the first clause.
  const message = (e.cause?.message ?? e.message ?? String(error)).trim().replace(/:\.\.\/deps\/openssl\/.*$/s, '');
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
