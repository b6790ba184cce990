/**
 * PostgreSQL restart (issue #6, part 1): the database itself goes away mid-run. While it is
 * down, /ready says so and API requests fail cleanly (503 service_unavailable in the spec's
 * error shape, quickly, never a 500 or a hang); when it is back the service recovers by
 * itself and nothing acknowledged is lost. Runs on a private PostgreSQL cluster started
 * for this file (the shared one on 5432 serves other test files), so it needs
 * TEST_DATABASE_URL, root, and the PostgreSQL server binaries.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import { describeOrSkip, PG_SKIP_REASON } from '../helpers.js';
import {
  type ApiResponse,
  api,
  assertError,
  auditDeliveries,
  auditOutbox,
  type ChaosDatabase,
  cli,
  createDatabase,
  freePort,
  LoadGenerator,
  lostWrites,
  PG_URL,
  Receiver,
  ServiceProcess,
  sleep,
  unfinishedDeliveries,
  waitFor,
} from './harness.js';

const run = promisify(execFile);
const WEBHOOK_TIMEOUT_MS = 1000;
const LEASE_MS = WEBHOOK_TIMEOUT_MS + 30_000;
/**
 * How long a probe sent while the database is down may take before it counts as unanswered.
 * Not a speed bound: the database stays down until every probe has settled, so an answer at
 * all means the request did not wait for the database to come back.
 */
const PROBE_TIMEOUT_MS = 20_000;

/** The newest PostgreSQL server binaries, or null. */
function findPgBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')) && existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

async function postgresUser(): Promise<{ uid: number; gid: number } | null> {
  try {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

const PG_BIN = findPgBin();
const skipReason = !PG_URL
  ? PG_SKIP_REASON
  : process.getuid?.() !== 0
    ? 'needs root to run a private PostgreSQL cluster as the postgres user'
    : !PG_BIN
      ? 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin'
      : false;

/** A throw-away PostgreSQL cluster on its own port, run as the postgres user. */
class PrivateCluster {
  readonly dataDir: string;
  constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
  ) {
    this.dataDir = path.join(dir, 'data');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private pgCtl(...args: string[]) {
    return run('runuser', ['-u', 'postgres', '--', path.join(this.bin, 'pg_ctl'), '-D', this.dataDir, ...args], {
      timeout: 60_000,
    });
  }

  static async create(bin: string): Promise<PrivateCluster> {
    const user = await postgresUser();
    if (!user) throw new Error('no postgres user');
    const dir = mkdtempSync(path.join(tmpdir(), 'affitrack-pg-'));
    chownSync(dir, user.uid, user.gid);
    const cluster = new PrivateCluster(bin, dir, await freePort());
    await run(
      'runuser',
      ['-u', 'postgres', '--', path.join(bin, 'initdb'), '-D', cluster.dataDir, '-A', 'trust', '-U', 'postgres'],
      { timeout: 120_000 },
    );
    await cluster.start();
    return cluster;
  }

  async start(): Promise<void> {
    // -l: the postmaster must not inherit our pipes, or pg_ctl's caller never sees them close.
    await this.pgCtl(
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`,
      '-l',
      path.join(this.dir, 'server.log'),
      '-w',
      'start',
    );
  }

  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.pgCtl('-m', mode, '-w', 'stop');
  }

  async destroy(): Promise<void> {
    await this.stop('immediate').catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}

interface Probe {
  what: string;
  response: ApiResponse | null;
  error: string | null;
  ms: number;
}

describeOrSkip('PostgreSQL restart mid-run', { skip: skipReason }, () => {
  let cluster: PrivateCluster | null = null;
  let db: ChaosDatabase | null = null;
  let svc: ServiceProcess | null = null;
  let generator: LoadGenerator | null = null;
  let receiver: Receiver | null = null;
  let apiKey = '';
  let offerId = '';
  let partnerId = '';
  let subscriptionId = '';
  /** When the database last went away (leases taken before then may need to expire). */
  let lastOutage = 0;
  const began = Date.now();
  const acknowledged: LoadGenerator['acknowledged'] = {
    conversions: new Set<string>(),
    partners: new Set<string>(),
    clicks: new Set<string>(),
    bans: new Set<string>(),
  };
  const restartsByTest: string[] = [];

  const base = () => (svc as ServiceProcess).baseUrl;

  /** Restarts the service if it died (as a supervisor would), so the later checks can still run. */
  async function reviveIfCrashed(when: string): Promise<void> {
    if (svc && !svc.running) {
      restartsByTest.push(when);
      await svc.start();
    }
  }

  async function probeAll(timeoutMs: number): Promise<Probe[]> {
    const probes: Probe[] = [];
    const probe = async (what: string, send: () => Promise<ApiResponse>) => {
      const started = performance.now();
      try {
        probes.push({ what, response: await send(), error: null, ms: performance.now() - started });
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        probes.push({ what, response: null, error: cause ?? String(error), ms: performance.now() - started });
      }
    };
    await Promise.all([
      probe('GET /ready', () => api(base(), null, 'GET', '/ready', undefined, timeoutMs)),
      probe('GET /health', () => api(base(), null, 'GET', '/health', undefined, timeoutMs)),
      probe('POST /api/v1/conversions', () =>
        api(
          base(),
          apiKey,
          'POST',
          '/api/v1/conversions',
          { offerId, partnerId, externalTxnId: `down-${Date.now()}` },
          timeoutMs,
        ),
      ),
      probe('POST /api/v1/partners', () =>
        api(base(), apiKey, 'POST', '/api/v1/partners', { name: 'Down', email: 'down@example.com' }, timeoutMs),
      ),
      probe('GET /api/v1/conversions', () => api(base(), apiKey, 'GET', '/api/v1/conversions', undefined, timeoutMs)),
      probe('GET /t/:offer/:partner', () =>
        api(base(), null, 'GET', `/t/${offerId}/${partnerId}`, undefined, timeoutMs),
      ),
    ]);
    return probes;
  }

  const describeProbes = (probes: Probe[]) =>
    probes
      .map(
        (p) =>
          `${p.what} → ${p.response ? `${p.response.status} ${p.response.body?.error?.code ?? ''}` : p.error} in ${Math.round(p.ms)} ms`,
      )
      .join('; ');

  /** Waits for /ready 200 and a 201 write; returns [readyMs, writableMs] after `since`. */
  async function waitForRecovery(since: number): Promise<[number, number]> {
    await waitFor(
      '/ready to answer 200 again',
      async () => (await api(base(), null, 'GET', '/ready', undefined, 3000)).status === 200,
      20_000,
    );
    const readyMs = Date.now() - since;
    await waitFor(
      'a write to succeed again',
      async () => {
        const write = await api(base(), apiKey, 'POST', '/api/v1/conversions', { offerId, partnerId }, 3000);
        if (write.status === 201) acknowledged.conversions.add(write.body.id);
        return write.status === 201;
      },
      20_000,
    );
    return [readyMs, Date.now() - since];
  }

  before(async () => {
    cluster = await PrivateCluster.create(PG_BIN as string);
    db = await createDatabase('postgres', cluster.url);
    apiKey = (await cli(db.env, 'brands', 'create', '--name', 'Restart')).apiKey;
    svc = new ServiceProcess(
      'serve-pg-restart',
      {
        ...db.env,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT: `${WEBHOOK_TIMEOUT_MS}ms`,
        WEBHOOK_RETRY_DELAYS: '100ms,200ms,300ms,400ms,500ms',
        RATE_LIMIT_PER_MINUTE: '10000000',
      },
      'all',
      await freePort(),
    );
    await svc.start();
    receiver = await Receiver.start({ failFirstAttempt: true });
    const sub = await api(base(), apiKey, 'POST', '/api/public/webhooks', {
      url: receiver.url,
      events: ['conversion.created', 'partner.approved', 'fraud.high_risk'],
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    subscriptionId = sub.body.id;
    const offer = await api(base(), apiKey, 'POST', '/api/v1/offers', {
      name: 'Restart offer',
      destinationUrl: 'https://shop.example.com/landing?click={click_id}',
    });
    assert.equal(offer.status, 201, JSON.stringify(offer.body));
    const partner = await api(base(), apiKey, 'POST', '/api/v1/partners', { name: 'Seed', email: 'seed@example.com' });
    assert.equal(partner.status, 201, JSON.stringify(partner.body));
    offerId = offer.body.id;
    partnerId = partner.body.id;
  });

  after(async () => {
    await generator?.stop().catch(() => {});
    await svc?.kill9().catch(() => {});
    await receiver?.close().catch(() => {});
    await db?.close().catch(() => {});
    await cluster?.destroy().catch(() => {});
    if (db) rmSync(db.dataDir, { recursive: true, force: true });
  });

  it('keeps running when PostgreSQL stops and starts again under load', { timeout: 90_000 }, async () => {
    const load = new LoadGenerator(
      { baseUrl: base, apiKey, offerId, partnerIds: [partnerId] },
      { intervalMs: 10, maxInflight: 16 },
    );
    generator = load;
    load.start();
    await sleep(2000);
    lastOutage = Date.now();
    await (cluster as PrivateCluster).stop('fast');
    const probes = await probeAll(PROBE_TIMEOUT_MS);
    await sleep(Math.max(0, 2000 - (Date.now() - lastOutage)));
    await (cluster as PrivateCluster).start();
    const restartedAt = Date.now();
    const crashed = (svc as ServiceProcess).crashes.length > 0;
    try {
      await reviveIfCrashed('phase 1');
      const [readyMs, writableMs] = await waitForRecovery(restartedAt);
      await sleep(2000);
      console.log(
        `[chaos pg-restart] under load: crashed=${crashed} readyAfterRestartMs=${readyMs} writableAfterRestartMs=${writableMs}`,
      );
      console.log(`[chaos pg-restart] under load, while down: ${describeProbes(probes)}`);
    } finally {
      await load.stop();
      for (const name of ['conversions', 'partners', 'clicks', 'bans'] as const) {
        for (const id of load.acknowledged[name]) acknowledged[name].add(id);
      }
      console.log(`[chaos pg-restart] responses ${JSON.stringify(Object.fromEntries([...load.statuses].sort()))}`);
    }
    assert.deepEqual(load.oddities, [], 'no 500s (or other unexpected answers) around the restart');
    const timeouts = [...load.statuses].filter(([label]) => label.includes('Timeout'));
    assert.deepEqual(timeouts, [], 'no request hung');
    assert.equal(crashed, false, `the service process exited by itself:\n${(svc as ServiceProcess).crashes[0] ?? ''}`);
    assert.ok(load.acknowledged.conversions.size > 5, 'the load did run');
  });

  it('while PostgreSQL is down: /ready and API routes answer 503 service_unavailable promptly', {
    timeout: 60_000,
  }, async () => {
    await reviveIfCrashed('before phase 2');
    const crashesBefore = (svc as ServiceProcess).crashes.length;
    lastOutage = Date.now();
    await (cluster as PrivateCluster).stop('fast');
    let probes: Probe[] = [];
    try {
      await sleep(300);
      probes = await probeAll(PROBE_TIMEOUT_MS);
      console.log(`[chaos pg-restart] quiet outage, while down: ${describeProbes(probes)}`);
    } finally {
      await sleep(Math.max(0, 2000 - (Date.now() - lastOutage)));
      await (cluster as PrivateCluster).start();
    }
    // The service is nearly idle here, but a worker query may still hold a connection: the same bug.
    assert.equal((svc as ServiceProcess).crashes.length, crashesBefore, 'the service survived the outage');
    const byWhat = new Map(probes.map((p) => [p.what, p]));
    for (const p of probes) {
      assert.ok(p.response, `${p.what} got an answer while the database was down (${p.error})`);
    }
    assert.equal(byWhat.get('GET /health')?.response?.status, 200, 'liveness stays up');
    for (const what of ['GET /ready', 'POST /api/v1/conversions', 'POST /api/v1/partners', 'GET /api/v1/conversions']) {
      assertError(byWhat.get(what)?.response as ApiResponse, 503, 'service_unavailable', what);
    }
    // A visitor following a tracking link gets a page asking to try again, not a redirect.
    const link = byWhat.get('GET /t/:offer/:partner')?.response as ApiResponse;
    assert.equal(link.status, 503, 'GET /t/:offer/:partner');
    assert.equal(link.headers.get('retry-after'), '1');
    assert.equal(link.headers.get('location'), null);
    assert.match(String(link.body), /temporarily unavailable/);
  });

  it('recovers by itself once PostgreSQL is back: /ready 200, writes 201', { timeout: 60_000 }, async () => {
    assert.ok((svc as ServiceProcess).running, 'the service survived the outages');
    const crashesBefore = (svc as ServiceProcess).crashes.length;
    const [readyMs, writableMs] = await waitForRecovery(Date.now());
    console.log(`[chaos pg-restart] quiet outage: readyAfterRestartMs=${readyMs} writableAfterRestartMs=${writableMs}`);
    assert.equal((svc as ServiceProcess).crashes.length, crashesBefore, 'without being restarted');
  });

  it('loses nothing acknowledged and finishes every delivery', { timeout: 90_000 }, async () => {
    await reviveIfCrashed('before the audit');
    const database = db as ChaosDatabase;
    // A delivery whose attempt could not be recorded while the database was down keeps its lease.
    await waitFor(
      'every delivery to be final',
      async () => (await unfinishedDeliveries(database)) === 0,
      Math.max(10_000, lastOutage + LEASE_MS + 15_000 - Date.now()),
      500,
    );
    const { lost, count: lostCount } = await lostWrites(database, acknowledged);
    const count = [...Object.values(acknowledged)].reduce((sum, set) => sum + set.size, 0);
    const audit = await auditDeliveries(database, new Map([[subscriptionId, receiver as Receiver]]));
    const outbox = await auditOutbox(database);
    console.log(
      `[chaos pg-restart] acknowledged=${count} (conversions=${acknowledged.conversions.size}` +
        ` partners=${acknowledged.partners.size} clicks=${acknowledged.clicks.size} bans=${acknowledged.bans.size}) found=${count - lostCount}` +
        ` lost=${lostCount} events=${audit.events} deliveries=${audit.deliveries} unfinished=${audit.unfinished.length}` +
        ` failed=${audit.failed} duplicates=${audit.duplicates} serviceRestartedByTest=[${restartsByTest.join(', ')}]` +
        ` totalMs=${Date.now() - began}`,
    );
    const problems = Object.fromEntries((svc as ServiceProcess).problems);
    if (Object.keys(problems).length > 0)
      console.log(`[chaos pg-restart] service warnings ${JSON.stringify(problems)}`);
    assert.deepEqual(
      lost,
      { conversions: [], partners: [], clicks: [], bans: [] },
      'every acknowledged write is present',
    );
    assert.deepEqual(outbox, [], 'every committed change has exactly its one event');
    assert.deepEqual(audit.fanOutProblems, []);
    assert.deepEqual(audit.unfinished, [], 'every delivery is final');
    assert.equal(audit.failed, 0);
    assert.deepEqual(audit.notReceived, []);
    assert.deepEqual(audit.mismatches, []);
  });
});
