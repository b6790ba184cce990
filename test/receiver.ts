/**
 * The one HTTP receiver of the tests and benchmarks: a real server on 127.0.0.1 (port 0)
 * that records every request byte for byte and answers as its user tells it — a status, a
 * delay, a body that stalls, a hang, a reset.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Header names as they were spelt on the wire, in order. */
  rawHeaderNames: string[];
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
      req.on('end', () => {
        const rawHeaderNames = req.rawHeaders.filter((_, i) => i % 2 === 0);
        const request = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, rawHeaderNames };
        receiver?.handle({ ...request, body: Buffer.concat(chunks), receivedAt: performance.now() }, res);
      });
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

  /** `http://127.0.0.1:<port>`, for URLs with a path of the test's own. */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Answers every request with `status` (and an optional body). */
  static answering(status: number, body?: string): Promise<Receiver> {
    return Receiver.start(() => ({ status, body }));
  }

  private handle(request: ReceivedRequest, res: ServerResponse): void {
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
