/**
 * Shared pieces of the chaos tests: the real service as a child process (`src/cli.ts serve`)
 * that can be killed with SIGKILL and restarted, a fresh database per run (a SQLite
 * directory, or a whole PostgreSQL database, because the server always uses `public`),
 * recording webhook receivers, a steady load generator that remembers every acknowledged
 * write, and direct database reads for the checks afterwards.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import pg from 'pg';

const run = promisify(execFile);

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const CLI = path.join(ROOT, 'src/cli.ts');
export const PG_URL = process.env.TEST_DATABASE_URL || null;
export const REDIS_URL = process.env.TEST_REDIS_URL || null;

export type Kind = 'sqlite' | 'postgres';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const randomBetween = (min: number, max: number) => min + Math.random() * (max - min);

/** A port nobody listens on right now (bind port 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs: number, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------
// Databases

export interface ChaosDatabase {
  kind: Kind;
  /** Environment that points the server and the CLI at this database. */
  env: Record<string, string>;
  dataDir: string;
  /** Read-only inspection (plain SQL, no parameters: both dialects accept it). */
  query<T = Record<string, unknown>>(text: string): Promise<T[]>;
  /** Closes the inspection connections (keeps the data). */
  close(): Promise<void>;
  /** Closes and deletes everything. */
  drop(): Promise<void>;
}

/** A fresh, empty database: a SQLite directory, or `CREATE DATABASE chaos_…` on `adminUrl`. */
export async function createDatabase(kind: Kind, adminUrl: string | null = PG_URL): Promise<ChaosDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-chaos-'));
  if (kind === 'sqlite') {
    const file = path.join(dataDir, 'affitrack.db');
    let db: SQLite.Database | null = null;
    const close = async () => {
      db?.close();
      db = null;
    };
    return {
      kind,
      env: { DATA_DIR: dataDir, DATABASE_URL: '' },
      dataDir,
      async query<T>(text: string) {
        if (!db) {
          if (!existsSync(file)) return [];
          db = new SQLite(file, { fileMustExist: true });
          db.pragma('busy_timeout = 5000');
        }
        return db.prepare(text).all() as T[];
      },
      close,
      async drop() {
        await close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  if (!adminUrl) throw new Error('no PostgreSQL URL');
  const name = `chaos_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  let pool: pg.Pool | null = null;
  const close = async () => {
    const p = pool;
    pool = null;
    await p?.end().catch(() => {});
  };
  return {
    kind,
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    dataDir,
    async query<T>(text: string) {
      if (!pool) {
        pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
        pool.on('error', () => {});
      }
      return (await pool.query(text)).rows as T[];
    },
    close,
    async drop() {
      await close();
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------
// The service as a child process, and the CLI

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Environment of a child: ours minus test-runner and database variables, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['NODE_TEST_CONTEXT', 'DATABASE_URL', 'REDIS_URL', 'PORT', 'DATA_DIR']) delete base[name];
  return { ...base, ...env };
}

/** Runs `affitrack <args> --json` and returns the one JSON object it prints. */
// biome-ignore lint/suspicious/noExplicitAny: the CLI's JSON output, read field by field by the tests
export async function cli(env: Record<string, string>, ...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, ...args, '--json'], {
    cwd: ROOT,
    env: childEnv({ LOG_LEVEL: 'warn', ...env }),
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim());
}

export type Role = 'all' | 'api' | 'worker';

/** One `affitrack serve` process that can be started, killed (-9) and started again. */
export class ServiceProcess {
  child: ChildProcess | null = null;
  starts = 0;
  kills = 0;
  /** How long each start took until ready (ms). */
  readonly startMs: number[] = [];
  /** The last lines of its output, for failure messages. */
  readonly tail: string[] = [];
  /** Counts of warn/error log messages over every run (`msg` → n). */
  readonly problems = new Map<string, number>();
  /** Exits nobody asked for (crashes), with the output tail at that moment. */
  readonly crashes: string[] = [];
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private startedLine: (() => void) | null = null;

  constructor(
    readonly name: string,
    readonly env: Record<string, string>,
    readonly role: Role,
    readonly port: number,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Spawns the process and waits until it serves /ready (API roles) or says it started (worker). */
  async start(timeoutMs = 40_000): Promise<void> {
    if (this.child) throw new Error(`${this.name} is already running`);
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--role', this.role], {
      cwd: ROOT,
      env: childEnv({
        PORT: String(this.port),
        HOST: '127.0.0.1',
        // The worker says "affitrack started" at info; API processes log every request at info.
        LOG_LEVEL: this.role === 'worker' ? 'info' : 'warn',
        ...this.env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.stopping = false;
    this.starts += 1;
    children.add(child);
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (this.child === child) this.child = null;
        this.remember(`[${this.name} exited code=${code} signal=${signal}]`);
        if (!this.stopping) {
          const cause = this.tail.find((l) => /^\s*(\w*Error|error)\b.*:/.test(l)) ?? '';
          const sqlState = this.tail.find((l) => /^\s*code: '/.test(l))?.trim() ?? '';
          this.crashes.push(
            `${this.name} exited by itself (code=${code} signal=${signal}): ${cause.trim()} ${sqlState}`,
          );
          console.log(`${this.name} exited by itself (code=${code} signal=${signal}):\n${this.tail.join('\n')}`);
        }
        resolve();
      });
    });
    const onData = (stream: NodeJS.ReadableStream) => {
      let buffer = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffer += chunk;
        let newline = buffer.indexOf('\n');
        while (newline >= 0) {
          this.line(buffer.slice(0, newline));
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
        }
      });
    };
    if (child.stdout) onData(child.stdout);
    if (child.stderr) onData(child.stderr);

    const startedSignal = new Promise<void>((resolve) => {
      this.startedLine = resolve;
    });
    const deadline = started + timeoutMs;
    if (this.role === 'worker') {
      const timer = sleep(timeoutMs).then(() => 'timeout' as const);
      const outcome = await Promise.race([
        startedSignal.then(() => 'ok' as const),
        this.exited.then(() => 'exit' as const),
        timer,
      ]);
      if (outcome !== 'ok') throw new Error(`${this.name} did not start (${outcome}):\n${this.tail.join('\n')}`);
      this.startMs.push(Date.now() - started);
      return;
    }
    for (;;) {
      if (!this.child) throw new Error(`${this.name} exited during start-up:\n${this.tail.join('\n')}`);
      try {
        const response = await fetch(`${this.baseUrl}/ready`, { signal: AbortSignal.timeout(2000) });
        if (response.status === 200) {
          this.startMs.push(Date.now() - started);
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`${this.name} not ready after ${timeoutMs} ms:\n${this.tail.join('\n')}`);
      await sleep(100);
    }
  }

  /** kill -9, and wait until it is gone. */
  async kill9(): Promise<void> {
    if (!this.child) return;
    this.kills += 1;
    this.stopping = true;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (graceful), SIGKILL if it lingers. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    child.kill('SIGTERM');
    const timedOut = await Promise.race([this.exited.then(() => false), sleep(graceMs).then(() => true)]);
    if (timedOut) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  private line(text: string): void {
    this.remember(text);
    if (text.includes('"affitrack started"')) this.startedLine?.();
    if (!text.startsWith('{')) return;
    try {
      const entry = JSON.parse(text) as { level?: number; msg?: string; err?: { message?: string } };
      if ((entry.level ?? 0) >= 40) {
        const cause = entry.err?.message ? `: ${entry.err.message.split('\n')[0]?.slice(0, 160)}` : '';
        const msg = `${entry.msg ?? '?'}${cause}`;
        this.problems.set(msg, (this.problems.get(msg) ?? 0) + 1);
      }
    } catch {
      // not a log line
    }
  }

  private remember(text: string): void {
    this.tail.push(text.length > 600 ? `${text.slice(0, 600)}…` : text);
    if (this.tail.length > 40) this.tail.shift();
  }
}

// ---------------------------------------------------------------------------------------
// HTTP client

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

// ---------------------------------------------------------------------------------------
// Webhook receivers

export interface Receipt {
  whId: string;
  evtId: string | null;
  event: string;
  body: Buffer;
  status: number;
}

/** A real HTTP receiver that records every request and answers 200 (or 500 to each first try). */
export class Receiver {
  readonly receipts: Receipt[] = [];
  readonly byWebhookId = new Map<string, Receipt[]>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly failFirstAttempt: boolean,
  ) {}

  static async start(options: { failFirstAttempt?: boolean } = {}): Promise<Receiver> {
    let receiver: Receiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const status = receiver?.record(req.headers, Buffer.concat(chunks)) ?? 500;
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(status === 200 ? 'ok' : 'try again');
      });
    });
    server.on('connection', (socket) => {
      receiver?.sockets.add(socket);
      socket.on('close', () => receiver?.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    receiver = new Receiver(server, `http://127.0.0.1:${port}/hook`, options.failFirstAttempt ?? false);
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

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------
// Steady load

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

// ---------------------------------------------------------------------------------------
// Checks against the database

export interface DeliveryRow {
  id: string;
  event_id: string;
  subscription_id: string;
  status: string;
  kind: string;
  attempt_count: number;
}

export interface DeliveryAudit {
  events: number;
  deliveries: number;
  /** Deliveries not in a final state. */
  unfinished: DeliveryRow[];
  failed: number;
  /** Events whose deliveries are not exactly one per matching subscription. */
  fanOutProblems: string[];
  /** Deliveries (succeeded) that their receiver never saw answered with 2xx. */
  notReceived: string[];
  /** Repeats that differed from the first receipt (other evt_ id or body bytes) or from the stored event. */
  mismatches: string[];
  /** Receipts beyond the first successful one per wh_ id. */
  duplicates: number;
  /** Receipts in total. */
  received: number;
}

/** Every event's deliveries against the subscriptions, and every receipt against the rows. */
export async function auditDeliveries(db: ChaosDatabase, receivers: Map<string, Receiver>): Promise<DeliveryAudit> {
  const events = await db.query<{ id: string; type: string; payload: string }>('select id, type, payload from events');
  const subscriptions = await db.query<{ id: string; events: string; status: string }>(
    'select id, events, status from webhook_subscriptions',
  );
  const deliveries = (
    await db.query<DeliveryRow>(
      'select id, event_id, subscription_id, status, kind, attempt_count from webhook_deliveries',
    )
  ).map((d) => ({ ...d, attempt_count: Number(d.attempt_count) }));
  const byEvent = new Map<string, DeliveryRow[]>();
  for (const d of deliveries) {
    if (d.kind !== 'webhook') continue;
    const list = byEvent.get(d.event_id) ?? [];
    list.push(d);
    byEvent.set(d.event_id, list);
  }
  const fanOutProblems: string[] = [];
  for (const event of events) {
    const expected = subscriptions
      .filter((s) => s.status === 'active' && (JSON.parse(s.events) as string[]).includes(event.type))
      .map((s) => s.id)
      .sort();
    const actual = (byEvent.get(event.id) ?? []).map((d) => d.subscription_id).sort();
    if (JSON.stringify(expected) !== JSON.stringify(actual)) {
      fanOutProblems.push(`${event.id} (${event.type}): expected ${expected.join(',')} got ${actual.join(',')}`);
    }
  }
  const payloads = new Map(events.map((e) => [e.id, e.payload]));
  const notReceived: string[] = [];
  const mismatches: string[] = [];
  let duplicates = 0;
  let received = 0;
  const known = new Set(deliveries.map((d) => d.id));
  for (const d of deliveries) {
    const receiver = receivers.get(d.subscription_id);
    if (!receiver || d.kind !== 'webhook') continue;
    const receipts = receiver.byWebhookId.get(d.id) ?? [];
    if (d.status === 'succeeded' && !receipts.some((r) => r.status === 200)) notReceived.push(d.id);
    const payload = payloads.get(d.event_id);
    const first = receipts[0];
    for (const r of receipts) {
      if (r.evtId !== d.event_id) mismatches.push(`${d.id}: evt ${r.evtId} instead of ${d.event_id}`);
      else if (first && !r.body.equals(first.body)) mismatches.push(`${d.id}: body differs between attempts`);
      else if (payload !== undefined && r.body.toString('utf8') !== payload) {
        mismatches.push(`${d.id}: body differs from the stored event`);
      }
    }
    const successes = receipts.filter((r) => r.status === 200).length;
    if (successes > 1) duplicates += successes - 1;
  }
  for (const receiver of receivers.values()) {
    received += receiver.receipts.length;
    for (const whId of receiver.byWebhookId.keys()) {
      if (!known.has(whId)) mismatches.push(`received ${whId}, which is no delivery in the database`);
    }
  }
  return {
    events: events.length,
    deliveries: deliveries.length,
    unfinished: deliveries.filter((d) => d.status !== 'succeeded' && d.status !== 'failed'),
    failed: deliveries.filter((d) => d.status === 'failed').length,
    fanOutProblems,
    notReceived,
    mismatches,
    duplicates,
    received,
  };
}

/** How many deliveries are not final yet. */
export async function unfinishedDeliveries(db: ChaosDatabase): Promise<number> {
  const [row] = await db.query<{ n: number | string }>(
    "select count(*) as n from webhook_deliveries where status not in ('succeeded', 'failed')",
  );
  return Number(row?.n ?? 0);
}

/** The ids of a table, as a set. */
export async function idsOf(db: ChaosDatabase, table: 'conversions' | 'partners' | 'clicks'): Promise<Set<string>> {
  return new Set((await db.query<{ id: string }>(`select id from ${table}`)).map((r) => r.id));
}

/** Acknowledged writes of `load` that the database does not hold (a ban: the partner is not banned). */
export async function lostWrites(db: ChaosDatabase, load: LoadGenerator['acknowledged']) {
  const banned = new Set(
    (await db.query<{ id: string }>("select id from partners where status = 'banned'")).map((r) => r.id),
  );
  const lost = {
    conversions: missing(load.conversions, await idsOf(db, 'conversions')),
    partners: missing(load.partners, await idsOf(db, 'partners')),
    clicks: missing(load.clicks, await idsOf(db, 'clicks')),
    bans: missing(load.bans, banned),
  };
  const count = lost.conversions.length + lost.partners.length + lost.clicks.length + lost.bans.length;
  return { lost, count };
}

/** Missing members of `expected` in `actual`. */
export function missing(expected: Set<string>, actual: Set<string>): string[] {
  return [...expected].filter((id) => !actual.has(id));
}

/**
 * The transactional outbox: every conversion has exactly one conversion.created, every
 * partner exactly one partner.approved or partner.applied, every banned partner exactly one
 * partner.banned, every high-risk click exactly one fraud.high_risk, and no event names a
 * row that does not exist. Returns the problems.
 */
export async function auditOutbox(db: ChaosDatabase): Promise<string[]> {
  const events = await db.query<{ id: string; type: string; payload: string }>('select id, type, payload from events');
  const counts = new Map<string, number>();
  for (const event of events) {
    const data = (JSON.parse(event.payload) as { data: Record<string, unknown> }).data;
    const subject =
      event.type === 'conversion.created'
        ? `conv:${data.conversionId}`
        : event.type === 'partner.approved' || event.type === 'partner.applied'
          ? `prt:${data.partnerId}`
          : event.type === 'partner.banned'
            ? `ban:${data.partnerId}`
            : event.type === 'fraud.high_risk'
              ? `clk:${data.clickId}`
              : null;
    if (subject) counts.set(subject, (counts.get(subject) ?? 0) + 1);
  }
  const expected = [
    ...(await db.query<{ id: string }>('select id from conversions')).map((r) => `conv:${r.id}`),
    ...(await db.query<{ id: string }>('select id from partners')).map((r) => `prt:${r.id}`),
    ...(await db.query<{ id: string }>("select id from partners where status = 'banned'")).map((r) => `ban:${r.id}`),
    ...(await db.query<{ id: string }>('select id from clicks where high_risk = 1')).map((r) => `clk:${r.id}`),
  ];
  const problems: string[] = [];
  for (const subject of expected) {
    const n = counts.get(subject) ?? 0;
    if (n !== 1) problems.push(`${subject}: ${n} creation events`);
    counts.delete(subject);
  }
  for (const [subject, n] of counts) problems.push(`${subject}: ${n} events for a row that does not exist`);
  return problems;
}
