/**
 * The chaos tests' webhook receiver: the tests' HTTP receiver (test/receiver.ts) keeping
 * every receipt by its wh_ id, so the audit can match each delivery row to what arrived.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Receiver as HttpReceiver } from '../receiver.js';

export interface Receipt {
  whId: string;
  evtId: string | null;
  event: string;
  body: Buffer;
  status: number;
}

/** Records every request and answers 200 (or 500 to each delivery's first try). */
export class Receiver {
  readonly receipts: Receipt[] = [];
  readonly byWebhookId = new Map<string, Receipt[]>();

  private constructor(
    private readonly http: HttpReceiver,
    readonly failFirstAttempt: boolean,
  ) {}

  get url(): string {
    return this.http.url;
  }

  static async start(options: { failFirstAttempt?: boolean } = {}): Promise<Receiver> {
    let receiver: Receiver | null = null;
    const http = await HttpReceiver.start((request) => {
      const status = receiver?.record(request.headers, request.body) ?? 500;
      return { status, headers: { 'content-type': 'text/plain' }, body: status === 200 ? 'ok' : 'try again' };
    });
    receiver = new Receiver(http, options.failFirstAttempt ?? false);
    return receiver;
  }

  private record(headers: IncomingHttpHeaders, body: Buffer): number {
    const whId = String(headers['x-service-webhook-id'] ?? '');
    let evtId: string | null = null;
    try {
      evtId = (JSON.parse(body.toString('utf8')) as { id?: string }).id ?? null;
    } catch {
      evtId = null;
    }
    const previous = this.byWebhookId.get(whId) ?? [];
    const status = this.failFirstAttempt && previous.length === 0 ? 500 : 200;
    const receipt: Receipt = { whId, evtId, event: String(headers['x-service-event'] ?? ''), body, status };
    this.receipts.push(receipt);
    previous.push(receipt);
    this.byWebhookId.set(whId, previous);
    return status;
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
