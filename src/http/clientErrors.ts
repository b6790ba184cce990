/**
 * Answers that Node's HTTP server would otherwise send itself, before a request ever reaches
 * Fastify's handlers: parser errors (malformed chunked bodies, conflicting or negative
 * Content-Length, raw non-ASCII bytes in the path, headers or URL too long), request
 * time-outs, an unknown `Expect`, a missing Host header, and requests arriving while the
 * server drains. Each gets the API's error shape, like every other response.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RequestPayload,
  RouteOptions,
} from 'fastify';
import { ApiError, ERROR_CODES, type ErrorCode, isApiUrl } from './errors.js';
import type { ServerTimeouts } from './timeouts.js';

/** The parser's error codes that are not a plain 400. */
const CLIENT_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: 'headers_too_large',
    message: 'The request line and headers are too large (the URL may be too long).',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'request_timeout', message: 'The request was not received in time.' },
};
const MALFORMED = { code: 'bad_request', message: 'The request is not valid HTTP/1.1.' } as const;

/** These answers come before any request exists, so they get a request id of their own. */
function errorJson(code: ErrorCode, message: string, requestId: string): string {
  return JSON.stringify({ error: { code, message, requestId } });
}

/**
 * Fastify's `clientErrorHandler`: the socket carries no parsed request, so the answer is
 * written as raw bytes, and the connection closed (the parser cannot resynchronise).
 */
export function answerClientError(
  log: FastifyBaseLogger,
  error: Error & { code?: string; reason?: string },
  socket: Duplex,
): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { code, message } = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
  const status = ERROR_CODES[code];
  // Never the error itself: the parser's `rawPacket` holds the request's bytes, Authorization
  // and Cookie included. Its code and reason are fixed words of the parser.
  const cause = { parserCode: error.code, reason: error.reason };
  // A response whose head is already on the wire (Node keeps it as the socket's
  // `_httpMessage`) cannot be followed by another: Node's own answer makes the same check.
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    log.debug({ ...cause, status }, 'malformed request dropped unanswered');
  } else {
    const requestId = randomUUID();
    // The id the answer hands out is one an operator can look up, like a routed request's.
    logRefusal(log, requestId, status, code, cause);
    const body = errorJson(code, message, requestId);
    // no-store: the request line may not have been parsed, so whether it was an API address
    // (whose every answer says no-store) is unknown; no cache has any use for a refusal anyway.
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Request-Id: ${requestId}\r\nCache-Control: no-store\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * One line per answer sent outside the routes, with the request id the answer carries, at
 * the level of the one line per routed request: nothing of the request's bytes or headers.
 */
function logRefusal(
  log: FastifyBaseLogger,
  requestId: string,
  status: number,
  code: ErrorCode,
  cause: Record<string, unknown> = {},
): void {
  log.info({ reqId: requestId, status, code, ...cause }, 'request refused before routing');
}

/** Node answers an `Expect` other than `100-continue` itself, with an empty 417, unless told otherwise. */
function answerUnmetExpectation(log: FastifyBaseLogger, request: IncomingMessage, response: ServerResponse): void {
  const requestId = randomUUID();
  logRefusal(log, requestId, ERROR_CODES.expectation_failed, 'expectation_failed');
  const body = errorJson('expectation_failed', 'Only "Expect: 100-continue" is supported.', requestId);
  response.writeHead(ERROR_CODES.expectation_failed, {
    'x-request-id': requestId,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
    // Like every other answer under /api (errors.ts isApiUrl), though no hook runs for this one.
    ...(isApiUrl(request.url ?? '') ? { 'cache-control': 'no-store' } : {}),
  });
  response.end(body);
}

/**
 * Takes over what Node and Fastify would otherwise answer in their own shapes. Node's
 * Host-header check and Fastify's 503 while closing are turned off in the server options
 * (see app.ts); the returned check does them instead and is called from the app's one
 * onRequest hook, so the common path pays no extra hook.
 */
export function registerClientErrorAnswers(
  app: FastifyInstance,
  timeouts: Pick<ServerTimeouts, 'requestTimeout' | 'connectionsCheckingInterval'>,
): (request: FastifyRequest, reply: FastifyReply) => void {
  (app.server as Server).on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    answerUnmetExpectation(app.log, request, response),
  );
  let closing = false;
  const sockets = trackSockets(app.server as Server);
  app.addHook('preClose', async () => {
    closing = true;
    endConnectionsWithAnswers(sockets);
    holdToRequestTimeout(app.log, sockets, timeouts);
  });
  return function refuseUnservable(request, reply) {
    // Fastify marks the response to a request arriving while it drains `Connection: close`.
    if (closing) {
      throw new ApiError('service_unavailable', 'The server is restarting. Please retry.', undefined, {
        'Retry-After': '1',
      });
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is answered 400.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      reply.header('connection', 'close');
      throw new ApiError('bad_request', 'An HTTP/1.1 request must carry a Host header.');
    }
  };
}

/**
 * `onRoute`: a route that takes a body refuses a Content-Encoding in a preParsing hook of its
 * own — after the onRequest hooks, so a keyed request is authenticated and counted first and
 * its 415 carries the RateLimit-* headers (or is 401, or 429), like the 415 of a wrong
 * Content-Type, which Fastify gives while parsing; and before any byte of the body is read.
 * Routes without a body method (every GET) get no hook and pay nothing.
 */
export function refuseCodedBodies(route: RouteOptions): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (!methods.some((method) => BODY_METHODS.has(method))) return;
  const own =
    route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing];
  route.preParsing = [refuseContentCoding, ...own];
}

function refuseContentCoding(
  request: FastifyRequest,
  _reply: FastifyReply,
  payload: RequestPayload,
  done: (error: Error | null, payload?: RequestPayload) => void,
): void {
  const coding = request.headers['content-encoding'];
  if (coding !== undefined && BODY_METHODS.has(request.method) && !IDENTITY.test(coding)) {
    done(unsupportedCoding(coding));
    return;
  }
  done(null, payload);
}

/** The server's open connections; tracked per connection, so a request pays nothing for it. */
function trackSockets(server: Server): Set<Duplex> {
  const sockets = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

/**
 * When the drain starts, the answers still to be sent to requests in flight say
 * `Connection: close`: they said keep-alive, so a client (undici, any pool) sent its next
 * request on that socket and got ECONNRESET when the process exited, instead of opening a
 * new connection (to another server, or this one restarted). Node keeps a connection's
 * current response as the socket's `_httpMessage`. A request pipelined behind one of them
 * goes unanswered with the closed connection, which HTTP/1.1 clients retry.
 */
function endConnectionsWithAnswers(sockets: Set<Duplex>): void {
  for (const socket of sockets) {
    const response = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (response && !response.headersSent) response.setHeader('connection', 'close');
  }
}

/**
 * REQUEST_TIMEOUT still holds while the server drains. Node stops looking for requests past
 * their time-out once its server is closing, so a client that never finished sending — a
 * request's head or body, or the rest of a body after an early answer (a 401) — held the
 * drain, and the exit, until its idle time-out or the 72 s keep-alive time-out. Counted from
 * the drain's start, a connection still receiving after REQUEST_TIMEOUT is answered 408 (when
 * nothing was answered yet) and closed. One whose request has arrived in full is left alone:
 * its answer is being worked on or sent, and the drain waits for it.
 */
/** What Node keeps on a server's socket: the response under way, and the request being parsed. */
type DrainingSocket = Duplex & {
  _httpMessage?: ServerResponse | null;
  parser?: { incoming?: IncomingMessage | null } | null;
};

function holdToRequestTimeout(
  log: FastifyBaseLogger,
  sockets: Set<Duplex>,
  timeouts: Pick<ServerTimeouts, 'requestTimeout' | 'connectionsCheckingInterval'>,
): void {
  const deadline = Date.now() + timeouts.requestTimeout;
  const timer = setInterval(() => {
    if (sockets.size === 0) {
      clearInterval(timer);
      return;
    }
    if (Date.now() < deadline) return;
    for (const socket of sockets as Set<DrainingSocket>) {
      const response = socket._httpMessage;
      if (response?.req.complete) continue;
      // No response under way while the parser still reads a request: that request was
      // answered early (a 401 before its body) and its body is still coming. Nothing more
      // to say to it.
      if (!response && socket.parser?.incoming) socket.destroy();
      else
        answerClientError(
          log,
          Object.assign(new Error('request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }),
          socket,
        );
    }
  }, timeouts.connectionsCheckingInterval);
  timer.unref();
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** No coding at all: `identity`, or an empty header. */
const IDENTITY = /^\s*(identity\s*)?$/i;
/** A coding name short and plain enough to repeat in the message. */
const CODING_NAME = /^[A-Za-z0-9._-]{1,32}$/;

/**
 * No body is ever decoded (RFC 9110 §8.4.1): a compressed one was read as is, and either
 * stored as garbage or refused as "not valid UTF-8". A coding is refused by name instead.
 */
function unsupportedCoding(coding: string): ApiError {
  const name = coding.trim();
  const named = CODING_NAME.test(name) ? `Content-Encoding "${name}"` : 'A Content-Encoding';
  return new ApiError(
    'unsupported_media_type',
    `${named} is not supported: send the request body uncompressed (identity).`,
  );
}
