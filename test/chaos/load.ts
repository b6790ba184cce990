/** A steady load on the running service that remembers every acknowledged write. */
import { randomBytes } from 'node:crypto';
import { api } from './client.js';

export interface LoadTarget {
  /** The base URL to send to now (the service may be down: requests then fail, which is fine). */
  baseUrl(): string;
  apiKey: string;
  offerId: string;
  partnerIds: string[];
}

type Operation = 'conversion' | 'click' | 'partner' | 'ban';

/**
 * Sends one request every `intervalMs` (a conversion, a click, a new partner, or a ban of
 * a partner it created, at random), at most `maxInflight` at once, and remembers every
 * acknowledged write with its id.
 */
export class LoadGenerator {
  readonly acknowledged = {
    conversions: new Set<string>(),
    partners: new Set<string>(),
    clicks: new Set<string>(),
    /** Partners whose ban was acknowledged (200). */
    bans: new Set<string>(),
  };
  readonly statuses = new Map<string, number>();
  /** Unexpected answers (5xx other than 503, 2xx without an id, …), for the report. */
  readonly oddities: string[] = [];
  sent = 0;
  private readonly bannable: string[] = [];
  private inflight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private counter = 0;
  private readonly runId = randomBytes(4).toString('hex');

  constructor(
    private readonly target: LoadTarget,
    private readonly options: { intervalMs?: number; maxInflight?: number; timeoutMs?: number } = {},
  ) {}

  get acknowledgedCount(): number {
    const a = this.acknowledged;
    return a.conversions.size + a.partners.size + a.clicks.size + a.bans.size;
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.options.intervalMs ?? 10);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private count(label: string): void {
    this.statuses.set(label, (this.statuses.get(label) ?? 0) + 1);
  }

  private tick(): void {
    if (this.inflight.size >= (this.options.maxInflight ?? 16)) return;
    const n = ++this.counter;
    const roll = Math.random();
    let op: Operation = roll < 0.45 ? 'conversion' : roll < 0.75 ? 'click' : roll < 0.9 ? 'partner' : 'ban';
    if (op === 'ban' && this.bannable.length === 0) op = 'partner';
    const task = this.send(op, n)
      .catch((error: unknown) => {
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        this.count(`${op}:${cause ?? (error as Error).name ?? 'error'}`);
      })
      .finally(() => this.inflight.delete(task));
    this.inflight.add(task);
    this.sent += 1;
  }

  private async send(op: Operation, n: number): Promise<void> {
    const { apiKey, offerId, partnerIds } = this.target;
    const base = this.target.baseUrl();
    const timeoutMs = this.options.timeoutMs ?? 10_000;
    const partnerId = partnerIds[n % partnerIds.length] as string;
    if (op === 'click') {
      const response = await fetch(`${base}/t/${offerId}/${partnerId}?sub1=chaos-${n}`, {
        redirect: 'manual',
        headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chaos/1.0' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.arrayBuffer();
      this.count(`click:${response.status}`);
      if (response.status === 503) return;
      if (response.status !== 302) return this.odd(`click ${response.status}`);
      const location = response.headers.get('location') ?? '';
      const clickId = new URL(location).searchParams.get('click');
      if (!clickId?.startsWith('clk_')) return this.odd(`click 302 without an id: ${location}`);
      this.acknowledged.clicks.add(clickId);
      return;
    }
    if (op === 'ban') {
      // Each created partner is banned at most once by the load; a 409 means an earlier ban
      // committed but its answer was lost with a killed process.
      const target = this.bannable.splice(Math.floor(Math.random() * this.bannable.length), 1)[0] as string;
      const response = await api(
        base,
        apiKey,
        'POST',
        `/api/v1/partners/${target}/ban`,
        { reason: 'chaos' },
        timeoutMs,
      );
      this.count(`ban:${response.status}`);
      if (response.status === 200 && response.body?.status === 'banned') this.acknowledged.bans.add(target);
      else if (response.status !== 503 && response.status !== 409) {
        this.odd(`ban ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
      }
      return;
    }
    const response =
      op === 'conversion'
        ? await api(
            base,
            apiKey,
            'POST',
            '/api/v1/conversions',
            { offerId, partnerId, externalTxnId: `chaos-${this.runId}-${n}` },
            timeoutMs,
          )
        : await api(
            base,
            apiKey,
            'POST',
            '/api/v1/partners',
            { name: `Chaos Partner ${n}`, email: `chaos-${this.runId}-${n}@example.com` },
            timeoutMs,
          );
    this.count(`${op}:${response.status}`);
    if (response.status >= 200 && response.status < 300) {
      const id = response.body?.id;
      if (typeof id !== 'string') return this.odd(`${op} ${response.status} without an id`);
      if (op === 'conversion') this.acknowledged.conversions.add(id);
      else {
        this.acknowledged.partners.add(id);
        this.bannable.push(id);
      }
    } else if (response.status !== 503) {
      this.odd(`${op} ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
    }
  }

  private odd(text: string): void {
    if (this.oddities.length < 50) this.oddities.push(text);
  }
}
