/**
 * Shared pieces of the webhook tests: a real HTTP receiver on 127.0.0.1 that records every
 * request byte for byte and answers as each test tells it, a clock that follows real time
 * for the tests of the real-time loop, and small helpers that create subscriptions and
 * fire events through the public API.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ManualClock } from '../../src/clock.js';
import type { TestEnv } from '../helpers.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, exactly as they arrived. */
  body: Buffer;
  /** performance.now() when the whole body had arrived. */
  receivedAt: number;
}

/** How the receiver answers one request. */
export type Answer =
  | {
      status: number;
      body?: string | Buffer;
      headers?: Record<string, string>;
      delayMs?: number;
      /** Send the status line, headers and body, then never end the response. */
      stallBody?: boolean;
    }
  | { hang: true }
  | { reset: true };

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Requests that got no answer yet (hanging or delayed). */
  pending = 0;
  answer: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 200 });
  private readonly sockets = new Set<Socket>();
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly port: number,
  ) {}

  static async start(answer?: Receiver['answer']): Promise<Receiver> {
    let receiver: Receiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => receiver?.handle(req.method ?? '', req.url ?? '', req.headers, Buffer.concat(chunks), res));
    });
    server.on('connection', (socket) => {
      receiver?.sockets.add(socket);
      socket.on('close', () => receiver?.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new Receiver(server, `http://127.0.0.1:${port}/hook`, port);
    if (answer) receiver.answer = answer;
    return receiver;
  }

  /** Answers every request with `status` (and an optional body). */
  static answering(status: number, body?: string): Promise<Receiver> {
    return Receiver.start(() => ({ status, body }));
  }

  private handle(method: string, path: string, headers: IncomingHttpHeaders, body: Buffer, res: ServerResponse): void {
    const request: ReceivedRequest = { method, path, headers, body, receivedAt: performance.now() };
    const index = this.requests.push(request) - 1;
    for (const wake of this.waiters) wake();
    const answer = this.answer(request, index);
    if ('reset' in answer) {
      res.socket?.destroy();
      return;
    }
    this.pending += 1;
    if ('hang' in answer) return;
    const send = () => {
      res.writeHead(answer.status, answer.headers);
      if (answer.stallBody) {
        res.write(answer.body ?? ' ');
        return;
      }
      this.pending -= 1;
      res.end(answer.body);
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  }

  /** Resolves once `count` requests have arrived; rejects after `timeoutMs`. */
  async waitForRequests(count: number, timeoutMs = 2000): Promise<void> {
    if (this.requests.length >= count) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (this.requests.length < count) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`expected ${count} requests within ${timeoutMs} ms, got ${this.requests.length}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** Distinct values of a header over every request received. */
  headerValues(name: string): string[] {
    return this.requests.map((r) => String(r.headers[name]));
  }

  /** Drops every open connection (hanging requests see a reset) and stops listening. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A ManualClock that follows the real clock, for tests of the real-time dispatcher loop. */
export class SystemTestClock extends ManualClock {
  override now(): number {
    return Date.now();
  }
}

export const ALL_EVENTS = [
  'conversion.created',
  'conversion.approved',
  'conversion.rejected',
  'partner.applied',
  'partner.approved',
  'partner.banned',
  'fraud.high_risk',
  'cap.reached',
  'payout.created',
  'payout.paid',
];

export interface SubscriptionView {
  id: string;
  url: string;
  events: string[];
  hasSecret: boolean;
  status: 'active' | 'disabled';
  createdAt: string;
}

/** POST /api/public/webhooks, asserting 201. */
export async function subscribe(
  env: TestEnv,
  body: { url: string; events?: string[]; secret?: string },
  key?: string,
): Promise<SubscriptionView> {
  const res = await env.request('POST', '/api/public/webhooks', {
    body: { events: ['partner.approved'], ...body },
    key,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

let partnerCounter = 0;

/** Creates an active partner through the API, which fires partner.approved. */
export async function firePartnerApproved(env: TestEnv, key?: string): Promise<string> {
  partnerCounter += 1;
  const res = await env.request('POST', '/api/v1/partners', {
    body: { name: `Partner ${partnerCounter}`, email: `p${partnerCounter}@example.com` },
    key,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** Records a conversion through the API (with a fresh offer and partner), which fires conversion.created. */
export async function fireConversionCreated(
  env: TestEnv,
  conversion: Record<string, unknown> = {},
  offer: Record<string, unknown> = {},
): Promise<{ id: string; offerId: string; partnerId: string }> {
  const offerRes = await env.request('POST', '/api/v1/offers', {
    body: { name: 'Offer', destinationUrl: 'https://shop.example/', ...offer },
  });
  assert.equal(offerRes.status, 201, JSON.stringify(offerRes.body));
  const partnerId = await firePartnerApproved(env);
  const res = await env.request('POST', '/api/v1/conversions', {
    body: { offerId: offerRes.body.id, partnerId, ...conversion },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.id, offerId: offerRes.body.id, partnerId };
}

/** Every delivery row of a subscription, oldest first. */
export function deliveriesOf(env: TestEnv, subscriptionId: string) {
  return env.ctx.db.read
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('id')
    .execute();
}

/** Removes every subscription, delivery and attempt, so each test starts from an empty log. */
export async function clearWebhooks(env: TestEnv): Promise<void> {
  await env.ctx.db.transact(async (trx) => {
    await trx.deleteFrom('webhook_attempts').execute();
    await trx.deleteFrom('webhook_deliveries').execute();
    await trx.deleteFrom('webhook_subscriptions').execute();
  });
}
