import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Socket } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { startMetricsServer } from '../../src/modules/metrics/routes.js';
import { createTestDatabase, createTestEnv, DIALECTS, expectError, type TestEnv, testedDialects } from '../helpers.js';
import { freePort } from '../net.js';
import { clearWebhooks, firePartnerApproved, Receiver, subscribe } from '../webhooks/harness.js';

const TOKEN = 'metrics-token-0123456789';

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (matches) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('metrics configuration', () => {
  it('is off by default and reads METRICS_PORT and METRICS_TOKEN', () => {
    const off = loadConfig({});
    assert.equal(off.metricsPort, null);
    assert.equal(off.metricsToken, null);
    const on = loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: TOKEN });
    assert.equal(on.metricsPort, 9464);
    assert.equal(on.metricsToken, TOKEN);
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), ConfigError);
    assert.throws(() => loadConfig({ METRICS_PORT: 'x' }), /METRICS_PORT/);
  });
});

describe('GET /metrics when metrics are off', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite');
  });
  after(() => env.close());

  it('does not exist, and builds no metrics', async () => {
    assert.equal(env.ctx.metrics, null);
    const res = await env.app.inject({ url: '/metrics' });
    assert.equal(res.statusCode, 404);
  });
});

for (const dialect of testedDialects()) {
  describe(`GET /metrics behind a bearer token (${dialect})`, () => {
    let env: TestEnv;
    const receivers: Receiver[] = [];
    before(async () => {
      env = await createTestEnv(dialect, { env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_PER_MINUTE: '3' } });
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await clearWebhooks(env);
    });
    after(() => env.close());

    const scrape = async () => {
      const res = await env.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^text\/plain/);
      return res.body;
    };

    it('refuses a missing or wrong token with 401 in the error shape', async () => {
      expectError(await env.request('GET', '/metrics', { key: null }), 401, 'unauthorized');
      expectError(await env.request('GET', '/metrics', { key: 'metrics-token-wrong-value' }), 401, 'unauthorized');
    });

    it('times requests by route pattern and status, never by raw URL', async () => {
      const other = await env.createBrand('Metrics');
      await env.request('GET', '/api/v1/offers/off_01JD0000000000000000000001', { key: other.apiKey });
      const text = await scrape();
      const count = sample(text, 'affitrack_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/offers/:id',
        status_code: '404',
      });
      assert.equal(count, 1);
      assert.equal(text.includes('off_01JD0000000000000000000001'), false);
    });

    it('counts rate-limit rejections', async () => {
      const brand = await env.createBrand('Limited');
      for (let i = 0; i < 4; i++) await env.request('GET', '/api/v1/offers', { key: brand.apiKey });
      assert.equal(sample(await scrape(), 'affitrack_rate_limit_rejections_total', { scope: 'key' }), 1);
    });

    it('counts delivery outcomes, the first-attempt delay and the due backlog', async () => {
      const brand = await env.createBrand('Deliveries');
      const ok = await Receiver.start();
      const failing = await Receiver.start(() => ({ status: 500 }));
      receivers.push(ok, failing);
      await subscribe(env, { url: ok.url }, brand.apiKey);
      await subscribe(env, { url: failing.url }, brand.apiKey);
      await firePartnerApproved(env, brand.apiKey);
      const due = await scrape();
      assert.equal(sample(due, 'affitrack_deliveries_due'), 2);
      env.clock.advance(1500);
      assert.equal(sample(await scrape(), 'affitrack_deliveries_oldest_due_age_seconds'), 1.5);

      const dispatcher = new Dispatcher(env.ctx);
      try {
        assert.equal(await dispatcher.runOnce(), 2);
      } finally {
        await dispatcher.close();
      }
      const text = await scrape();
      assert.equal(sample(text, 'affitrack_delivery_attempts_total', { kind: 'webhook', outcome: 'succeeded' }), 1);
      assert.equal(
        sample(text, 'affitrack_delivery_attempts_total', { kind: 'webhook', outcome: 'retry_scheduled' }),
        1,
      );
      assert.equal(sample(text, 'affitrack_delivery_first_attempt_delay_seconds_count', { kind: 'webhook' }), 2);
      assert.equal(sample(text, 'affitrack_delivery_first_attempt_delay_seconds_sum', { kind: 'webhook' }), 3);
      assert.equal(sample(text, 'affitrack_deliveries_due'), 0);
      if (dialect === 'sqlite') {
        const batches = sample(text, 'affitrack_group_commit_batch_size_count');
        assert.ok(batches !== undefined && batches > 0, 'group commits are counted');
      } else {
        assert.doesNotMatch(text, /affitrack_group_commit_batch_size/, 'PostgreSQL has no group commit to count');
      }
      assert.equal(sample(text, 'affitrack_database_up'), 1);
    });
  });
}

describe('GET /metrics on its own port', () => {
  let env: TestEnv;
  let server: Server | null = null;
  before(async () => {
    env = await createTestEnv('sqlite', { env: { METRICS_PORT: String(await freePort()), METRICS_TOKEN: TOKEN } });
    server = await startMetricsServer(env.ctx);
  });
  after(async () => {
    server?.close();
    await env.close();
  });

  it('serves the exposition format on the metrics port, with the token, and not on the API port', async () => {
    assert.ok(server);
    const { port } = server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/metrics`;
    assert.equal((await fetch(url)).status, 401);
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /# TYPE affitrack_http_request_duration_seconds histogram/);
    assert.match(text, /# TYPE affitrack_deliveries_due gauge/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    const onApi = await env.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(onApi.statusCode, 404);
  });

  it("answers its errors in the API's error shape, with X-Request-Id and the API's realm", async () => {
    assert.ok(server);
    const { port } = server.address() as AddressInfo;
    for (const [path, status, code] of [
      ['/metrics', 401, 'unauthorized'],
      ['/nope?token=secret', 404, 'not_found'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      assert.equal(res.status, status);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      const requestId = res.headers.get('x-request-id');
      assert.ok(requestId, 'an X-Request-Id');
      const body = (await res.json()) as { error: { code: string; message: string; requestId: string } };
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'requestId']);
      assert.equal(body.error.code, code);
      assert.equal(body.error.requestId, requestId);
      assert.doesNotMatch(body.error.message, /secret/, 'no query string echoed');
      if (status === 401) {
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="affitrack"');
        assert.match(body.error.message, /METRICS_TOKEN/);
      }
    }
  });
});

/**
 * A TCP relay in front of the test PostgreSQL server that can cut every connection and refuse
 * new ones (the database gone, as far as the app can tell) and then let them through again.
 */
async function relayTo(url: string): Promise<{ port: number; cut(): void; restore(): void; close(): Promise<void> }> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) return client.destroy();
    const upstream = createConnection(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    down = true;
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    restore: () => {
      down = false;
    },
    close: async () => {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`GET /metrics while the database is unreachable (${dialect})`, () => {
    let relay: Awaited<ReturnType<typeof relayTo>>;
    let onApi: TestEnv;
    let onPort: TestEnv;
    let server: Server | null = null;
    const cleanup: Array<() => Promise<unknown>> = [];
    before(async () => {
      const database = await createTestDatabase(dialect);
      cleanup.push(() => database.drop());
      assert.ok(database.url && database.schema);
      relay = await relayTo(database.url);
      cleanup.push(() => relay.close());
      const relayed = () => {
        const url = new URL(database.url as string);
        url.host = `127.0.0.1:${relay.port}`;
        const db = new Database({
          databaseUrl: url.href,
          dataDir: database.dataDir,
          schema: database.schema as string,
          poolSize: 2,
        });
        return { ...database, url: url.href, db, drop: () => db.close() };
      };
      const first = relayed();
      onApi = await createTestEnv(dialect, { env: { METRICS_TOKEN: TOKEN }, database: first });
      cleanup.push(
        () => first.drop(),
        () => onApi.close(),
      );
      const second = relayed();
      onPort = await createTestEnv(dialect, { env: { METRICS_PORT: String(await freePort()) }, database: second });
      cleanup.push(
        () => second.drop(),
        () => onPort.close(),
      );
      server = await startMetricsServer(onPort.ctx);
      cleanup.push(async () => server?.close());
    });
    after(async () => {
      for (const step of cleanup.reverse()) await step();
    });

    const scrapeBoth = async (): Promise<string[]> => {
      const api = await onApi.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(api.statusCode, 200, api.body);
      assert.ok(server);
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      return [api.body, text];
    };
    const linesWith = (env: TestEnv, words: string) => env.logs.filter((line) => line.includes(words)).length;

    it('still answers 200 with the in-process series, leaves the database gauges out and says so once per outage', async () => {
      for (const text of await scrapeBoth()) {
        assert.equal(sample(text, 'affitrack_database_up'), 1);
        assert.equal(sample(text, 'affitrack_deliveries_due'), 0);
      }

      relay.cut();
      for (let scrape = 0; scrape < 2; scrape++) {
        for (const text of await scrapeBoth()) {
          assert.equal(sample(text, 'affitrack_database_up'), 0, 'the outage is told by a gauge');
          assert.equal(sample(text, 'affitrack_deliveries_due'), undefined, 'no stale or made-up backlog');
          assert.equal(sample(text, 'affitrack_deliveries_oldest_due_age_seconds'), undefined);
          assert.ok(sample(text, 'process_cpu_user_seconds_total') !== undefined, 'process series are still there');
        }
      }
      for (const env of [onApi, onPort]) assert.equal(linesWith(env, 'metrics: cannot read the database'), 1);

      relay.restore();
      for (const text of await scrapeBoth()) {
        assert.equal(sample(text, 'affitrack_database_up'), 1);
        assert.equal(sample(text, 'affitrack_deliveries_due'), 0);
      }
      for (const env of [onApi, onPort]) assert.equal(linesWith(env, 'gauges are read again'), 1);
    });
  });
}
