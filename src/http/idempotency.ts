/**
 * `Idempotency-Key` on every POST of /api/v1 and /api/public, with Stripe's semantics. The
 * first request with a key claims it (its own small transaction: a concurrent request with
 * the key sees the claim and gets 409 `idempotency_key_in_use`). Its work then runs as usual,
 * except that the work's transaction stays open until the answer is serialised and commits
 * the answer with the work: either both are durable or neither is, so a retry after a crash
 * either replays the answer or does the work for the first time, never twice. A later request
 * with the key and the same request — the same method, operation (the route and its path
 * parameters: `/offers/` is `/offers`) and body — gets the stored status and body with
 * `Idempotent-Replayed: true`; with another request it is 422 `idempotency_key_reused`.
 * Keys are kept 24 hours per brand, as Stripe keeps them per account: a retry through the
 * brand's other API key (during a key rotation) replays too. Per partner for a partner key,
 * per client IP on the public form, which takes no key. Stored hashed, with their answers
 * sealed (db/idempotencyAtRest.ts): an answer can hold a secret.
 *
 * Without the header a request pays one header lookup: the hooks are attached to POST routes
 * only, and the binding below (an AsyncLocalStorage) is switched off while no keyed request runs.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import type { AppContext } from '../context.js';
import { type TransactionBinding, type TransactWork, type Trx, transactionBinding } from '../db/database.js';
import { openAnswer, sealAnswer, sealingKeyOf, storedKeyOf } from '../db/idempotencyAtRest.js';
import { ApiError } from './errors.js';

/** How long a key is remembered (Stripe: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** Longest a work transaction waits for its answer before committing without it (the answer is then stored apart). */
const ANSWER_WAIT_MS = 5000;
const KEY_TEXT = /^[\x20-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: KeyedRun;
  }
}

interface Answer {
  status: number;
  body: string;
}

/** One request with a claimed key: binds its first transaction so the answer commits with the work. */
class KeyedRun implements TransactionBinding {
  state: 'waiting' | 'holding' | 'released' = 'waiting';
  /** The held transaction's work finished (its result went to the handler). */
  handedOver = false;
  /** The work is committed, with or without the answer. */
  workCommitted = false;
  /** Settles when the held transaction has committed: true when the answer is in it. */
  committed: Promise<boolean> | null = null;
  private giveAnswer: (answer: Answer | null) => void = () => {};
  private readonly answer = new Promise<Answer | null>((resolve) => {
    this.giveAnswer = resolve;
  });

  constructor(
    readonly scope: string,
    /** The key as stored (its hash). */
    readonly key: string,
    readonly sealingKey: Buffer,
  ) {}

  transact<T>(work: TransactWork<T>, run: <U>(work: TransactWork<U>) => Promise<U>): Promise<T> {
    // A second transaction in one request must not wait behind the first (on SQLite it would
    // queue behind the held batch): the first commits now and the answer is stored apart.
    if (this.state !== 'waiting') {
      this.release();
      return run(work);
    }
    this.state = 'holding';
    return new Promise<T>((resolve, reject) => {
      this.committed = run(async (trx) => {
        const result = await work(trx);
        this.handedOver = true;
        resolve(result);
        const answer = await this.awaitAnswer();
        await recordOutcome(trx, this, answer);
        return answer !== null;
      }).then(
        (stored) => {
          this.workCommitted = true;
          return stored;
        },
        (error: unknown) => {
          if (!this.handedOver) reject(error);
          throw error;
        },
      );
      // Awaited by the onSend hook; this only keeps an unobserved failure from being reported twice.
      this.committed.catch(() => {});
    });
  }

  provide(answer: Answer): void {
    this.giveAnswer(answer);
  }

  release(): void {
    this.state = 'released';
    this.giveAnswer(null);
  }

  private async awaitAnswer(): Promise<Answer | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), ANSWER_WAIT_MS);
    });
    try {
      return await Promise.race([this.answer, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Marks the key's work as committed, with the answer when there is one, in `trx`. */
async function recordOutcome(trx: Trx, run: KeyedRun, answer: Answer | null): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set(
      answer
        ? { work_committed: 1, status_code: answer.status, response_body: sealAnswer(run.sealingKey, answer.body) }
        : { work_committed: 1 },
    )
    .where('scope', '=', run.scope)
    .where('key', '=', run.key)
    .execute();
}

/** A JSON value with every object's keys sorted: the same members make the same text. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .map((key) => [key, canonical(object[key])]),
  );
}

/**
 * The request's path as its route reads it: the route's pattern with its parameters filled in,
 * so that every URL Fastify routes to the same operation with the same parameters (`/offers/`
 * and `/offers`) gives the same path. The query string, if any, follows as sent. For a URL
 * that has no trailing slash this is the URL itself, as fingerprints stored before held it.
 */
function canonicalPath(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  if (pattern === undefined) return request.url;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const path = pattern.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name] ?? '')));
  const query = request.url.indexOf('?');
  return query < 0 ? path : path + request.url.slice(query);
}

function hashRequest(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n`).update(JSON.stringify(body)).digest('hex');
}

/** The request as the key remembers it: method, operation and the body's JSON value (not its key order). */
function fingerprintOf(request: FastifyRequest): string {
  return hashRequest(request.method, canonicalPath(request), canonical(request.body ?? null));
}

/**
 * The fingerprints earlier builds stored for this request. Rows of the last 24 hours survive an
 * upgrade (migrations 0031 and 0041 promise they replay), but until a868816 the body was hashed
 * as sent, its members in the client's order, and until 68d3c1f with the raw URL: the same
 * request retried on this build hashes differently. Comparing with these on a mismatch keeps
 * the promise, and stays exact: each is the same method, URL and body JSON, only written as the
 * older build wrote it, so a different request still matches none of them.
 */
function earlierFingerprintsOf(request: FastifyRequest): string[] {
  const body = request.body ?? null;
  return [hashRequest(request.method, request.url, body), hashRequest(request.method, request.url, canonical(body))];
}

/** A stored error answer names the request that made it: a replay names this one (X-Request-Id). */
function withThisRequestId(body: string, status: number, requestId: string): string {
  if (status < 400) return body;
  try {
    const parsed = JSON.parse(body) as { error?: { requestId?: string } };
    if (!parsed.error || typeof parsed.error !== 'object') return body;
    parsed.error.requestId = requestId;
    return JSON.stringify(parsed);
  } catch {
    return body;
  }
}

function inUse(): ApiError {
  return new ApiError(
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still being processed. Retry once it has finished.',
  );
}

/**
 * Who an Idempotency-Key belongs to: the brand of a brand API key (any of its keys), the
 * partner of a partner key, or the client's IP on the routes that take no key.
 */
function scopeOf(request: FastifyRequest): string {
  if (request.auth) return `brand:${request.auth.brandId}`;
  if (request.partnerAuth) return `partner:${request.partnerAuth.partnerId}`;
  return `ip:${request.ip}`;
}

/** Claims the key, or tells what to answer instead: a stored answer to replay, or an error. */
async function claim(
  ctx: AppContext,
  { scope, key, sealingKey }: KeyedRun,
  idempotencyKey: string,
  request: FastifyRequest,
  leaseMs: number,
): Promise<Answer | null> {
  const fingerprint = fingerprintOf(request);
  const now = ctx.clock.now();
  return ctx.db.transact(async (trx) => {
    const row = await trx
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst();
    const fresh = {
      fingerprint,
      sealed_under: null,
      status_code: null,
      response_body: null,
      work_committed: 0,
      locked_until: now + leaseMs,
    };
    if (!row) {
      const inserted = await trx
        .insertInto('idempotency_keys')
        .values({ scope, key, ...fresh, created_at: now })
        .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) throw inUse();
      return null;
    }
    if (row.created_at > now - IDEMPOTENCY_TTL_MS) {
      if (row.fingerprint !== fingerprint && !earlierFingerprintsOf(request).includes(row.fingerprint)) {
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was used with a different request (method, URL or body). Use a new key for a new request.',
        );
      }
      if (row.status_code !== null) {
        // A key stored before keys belonged to the brand is sealed under its API key's id (migration 0041).
        const opening = row.sealed_under === null ? sealingKey : sealingKeyOf(row.sealed_under, idempotencyKey);
        return { status: row.status_code, body: storedBody(row.response_body, opening) };
      }
      if (row.work_committed === 1 || row.locked_until > now) throw inUse();
    }
    // Expired, or claimed by a request that died before committing anything: start afresh.
    // The guard on the old values lets one of two concurrent takers win.
    const taken = await trx
      .updateTable('idempotency_keys')
      .set({ ...fresh, created_at: now })
      .where('scope', '=', scope)
      .where('key', '=', key)
      .where('locked_until', '=', row.locked_until)
      .where('created_at', '=', row.created_at)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 0) throw inUse();
    return null;
  });
}

/**
 * Ends the claims of requests that were running when the process serving them died: on
 * SQLite the server that opens the database is the only one answering with it, so every
 * unfinished claim it finds at start-up is a dead one (nothing committed, or the work would
 * be marked), and a retry must not wait out the lease. Returns how many were released.
 */
export async function releaseAbandonedClaims(ctx: AppContext): Promise<number> {
  const result = await ctx.db.transact((trx) =>
    trx
      .updateTable('idempotency_keys')
      .set({ locked_until: 0 })
      .where('status_code', 'is', null)
      .where('work_committed', '=', 0)
      .where('locked_until', '>', 0)
      .executeTakeFirst(),
  );
  return Number(result.numUpdatedRows);
}

/** Deletes keys older than 24 hours (the worker calls it periodically). */
export async function sweepIdempotencyKeys(ctx: AppContext): Promise<number> {
  const cutoff = ctx.clock.now() - IDEMPOTENCY_TTL_MS;
  const result = await ctx.db.transact((trx) =>
    trx.deleteFrom('idempotency_keys').where('created_at', '<', cutoff).executeTakeFirst(),
  );
  return Number(result.numDeletedRows);
}

/** The stored answer's body; one that does not open (altered in the database) is not replayed as something else. */
function storedBody(stored: string | null, sealingKey: Buffer): string {
  if (stored === null) return '';
  const body = openAnswer(sealingKey, stored);
  if (body === null) throw new Error('A stored idempotent answer does not open with its key.');
  return body;
}

function serviceUnavailable(reply: FastifyReply): string {
  reply.code(503).header('Retry-After', '1').type('application/json; charset=utf-8');
  return JSON.stringify({
    error: {
      code: 'service_unavailable',
      message: 'The service is temporarily unavailable. Please retry shortly.',
      requestId: reply.request.id,
    },
  });
}

/**
 * The hooks, attached by `onRoute` to every POST under /api/v1 and /api/public. Keyed
 * requests in flight are counted so the binding is switched off while there are none.
 */
export function idempotency(ctx: AppContext) {
  let inFlight = 0;
  // A claim outlives the slowest request Fastify lets through, so a live request is never taken over.
  const leaseMs = 2 * ctx.config.requestTimeoutMs;

  const finish = (request: FastifyRequest) => {
    if (!request.idempotency) return;
    request.idempotency = undefined;
    inFlight -= 1;
    if (inFlight === 0) transactionBinding.disable();
  };

  function preHandler(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const header = request.headers['idempotency-key'];
    if (header === undefined) {
      done();
      return;
    }
    const key = String(header);
    if (!KEY_TEXT.test(key)) {
      done(
        ApiError.validation([
          { path: 'header.Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters, such as a UUID' },
        ]),
      );
      return;
    }
    const scope = scopeOf(request);
    const run = new KeyedRun(scope, storedKeyOf(key), sealingKeyOf(scope, key));
    claim(ctx, run, key, request, leaseMs).then(
      (stored) => {
        if (stored) {
          reply.code(stored.status).header('Idempotent-Replayed', 'true');
          if (stored.body === '') return reply.send();
          return reply
            .type('application/json; charset=utf-8')
            .send(withThisRequestId(stored.body, stored.status, request.id));
        }
        request.idempotency = run;
        inFlight += 1;
        transactionBinding.run(run, done);
      },
      (error: unknown) => done(error as Error),
    );
  }

  async function onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const run = request.idempotency;
    if (!run) return payload;
    try {
      const answer = { status: reply.statusCode, body: payload == null ? '' : String(payload) };
      if (run.state === 'holding' && run.committed) {
        run.provide(answer);
        try {
          if (await run.committed) return payload;
        } catch (error) {
          if (run.handedOver) {
            // The work and its answer failed to commit together: nothing was done.
            request.log.warn({ err: error }, 'storage unavailable');
            await forget(ctx, run).catch(() => {});
            return serviceUnavailable(reply);
          }
          // The work failed and rolled back; its error answer is stored below.
        }
      } else {
        run.release();
      }
      // The answer was not committed with the work: the request wrote nothing, its work failed,
      // or it used more than one transaction. A server error with nothing done frees the key.
      if (answer.status >= 500 && !run.workCommitted) await forget(ctx, run);
      else await storeAnswer(ctx, run, answer);
    } catch (error) {
      request.log.warn({ err: error }, 'idempotency key not updated');
    } finally {
      finish(request);
    }
    return payload;
  }

  return {
    /** `onRoute`: the hooks go on POST routes of the JSON API only. */
    attach(route: RouteOptions): void {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (!methods.includes('POST')) return;
      if (!route.url.startsWith('/api/v1/') && !route.url.startsWith('/api/public/')) return;
      route.preHandler = [...asList(route.preHandler), preHandler];
      route.onSend = [...asList(route.onSend), onSend];
      // A client that goes away must not keep the work's transaction waiting for an answer.
      route.onRequestAbort = [
        ...asList(route.onRequestAbort),
        async (request: FastifyRequest) => request.idempotency?.release(),
      ];
    },
  };
}

function asList<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

async function storeAnswer(ctx: AppContext, run: KeyedRun, answer: Answer): Promise<void> {
  await ctx.db.transact((trx) => recordOutcome(trx, run, answer));
}

async function forget(ctx: AppContext, run: KeyedRun): Promise<void> {
  await ctx.db.transact((trx) =>
    trx
      .deleteFrom('idempotency_keys')
      .where('scope', '=', run.scope)
      .where('key', '=', run.key)
      .where('work_committed', '=', 0)
      .execute(),
  );
}
