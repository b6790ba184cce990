/**
 * REQUEST_TIMEOUT as Node's HTTP server must be told it, so that a client too slow to send
 * its request (headers or body) is answered 408 request_timeout (http/clientErrors.ts)
 * instead of losing its connection without a word.
 *
 * Node looks for requests past their time-out only on a timer (`connectionsCheckingInterval`,
 * 30 s by default), while its idle time-out (`server.timeout`, Fastify's `connectionTimeout`)
 * destroys a silent socket at once and says nothing. Both at REQUEST_TIMEOUT, the idle
 * time-out won for every client that stalled: the 408 was never sent. So the check runs
 * often enough to answer close to the time-out, and the idle time-out waits until it has run.
 */

/** A stalled request is answered at most a tenth of REQUEST_TIMEOUT after it expired. */
const CHECKS_PER_TIMEOUT = 10;
/** Each check walks every open connection: not more often than this. */
const MIN_CHECK_INTERVAL_MS = 100;
/** Node's own default: a long REQUEST_TIMEOUT is never checked less often than Node would. */
const MAX_CHECK_INTERVAL_MS = 30_000;

export interface ServerTimeouts {
  /** Whole request, headers and body (Node's `requestTimeout`). */
  requestTimeout: number;
  /**
   * Headers alone get no longer than the whole request. Node's default, 60 s, is longer
   * than a 30 s REQUEST_TIMEOUT, and Node then swaps the two: bodies got 60 s.
   */
  headersTimeout: number;
  connectionsCheckingInterval: number;
  /** A socket silent this long is closed (a client that stopped reading its answer). */
  idleTimeout: number;
}

export function serverTimeouts(requestTimeoutMs: number): ServerTimeouts {
  const interval = Math.min(
    MAX_CHECK_INTERVAL_MS,
    Math.max(MIN_CHECK_INTERVAL_MS, Math.ceil(requestTimeoutMs / CHECKS_PER_TIMEOUT)),
  );
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: interval,
    // A stalled request has gone silent no earlier than it started, and is found expired at
    // most one interval after its time-out; a second interval is slack for a busy event loop.
    idleTimeout: requestTimeoutMs + 2 * interval,
  };
}
