/**
 * Scale-out on PostgreSQL (issue #6, part 2): two API processes (`serve --role api`) and
 * two worker processes (`serve --role worker`) on one fresh database and one Redis. Each
 * delivery is claimed by one worker at a time (one attempt, one receipt), hold-time
 * approvals and cap.reached fire once, and the per-key rate limit is shared.
 * Needs TEST_DATABASE_URL and TEST_REDIS_URL.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeOrSkip, PG_SKIP_REASON, REDIS_SKIP_REASON } from '../helpers.js';
import {
  type ApiResponse,
  api,
  assertError,
  type ChaosDatabase,
  cli,
  createDatabase,
  freePort,
  PG_URL,
  REDIS_URL,
  Receiver,
  ServiceProcess,
  sleep,
  unfinishedDeliveries,
  waitFor,
} from './harness.js';

const skip = !PG_URL ? PG_SKIP_REASON : !REDIS_URL ? REDIS_SKIP_REASON : false;

/** Runs `tasks` with at most `limit` at once. */
async function pooled<T>(limit: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await (tasks[index] as () => Promise<T>)();
    }
  });
  await Promise.all(workers);
  return results;
}

describeOrSkip('scale-out: 2 API + 2 worker processes on one PostgreSQL and one Redis', { skip }, () => {
  let db: ChaosDatabase | null = null;
  let receiver: Receiver | null = null;
  const processes: ServiceProcess[] = [];
  let apis: ServiceProcess[] = [];
  let brandId = '';
  let apiKey = '';
  let subscriptionId = '';
  const began = Date.now();

  const database = () => db as ChaosDatabase;
  /** The i-th request goes to API process i mod 2. */
  const via = (i: number) => (apis[i % apis.length] as ServiceProcess).baseUrl;

  async function createOffer(body: Record<string, unknown>): Promise<string> {
    const response = await api(via(0), apiKey, 'POST', '/api/v1/offers', {
      name: 'Scale offer',
      destinationUrl: 'https://shop.example.com/landing?click={click_id}',
      ...body,
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return response.body.id;
  }

  async function createPartner(): Promise<string> {
    const response = await api(via(1), apiKey, 'POST', '/api/v1/partners', {
      name: 'Scale partner',
      email: `scale-${Math.random().toString(36).slice(2)}@example.com`,
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return response.body.id;
  }

  /** Every delivery so far: final, exactly one attempt, received exactly once. */
  async function auditExactlyOnce() {
    await waitFor(
      'every delivery to be final',
      async () => (await unfinishedDeliveries(database())) === 0,
      30_000,
      250,
    );
    const deliveries = await database().query<{ id: string; status: string; attempt_count: number }>(
      "select id, status, attempt_count from webhook_deliveries where kind = 'webhook'",
    );
    const attempts = await database().query<{ delivery_id: string; n: string | number }>(
      'select delivery_id, count(*) as n from webhook_attempts group by delivery_id',
    );
    const attemptsBy = new Map(attempts.map((a) => [a.delivery_id, Number(a.n)]));
    const rx = receiver as Receiver;
    const problems: string[] = [];
    for (const d of deliveries) {
      const seen = rx.byWebhookId.get(d.id)?.length ?? 0;
      const tries = attemptsBy.get(d.id) ?? 0;
      if (d.status !== 'succeeded' || seen !== 1 || tries !== 1 || Number(d.attempt_count) !== 1) {
        problems.push(
          `${d.id}: ${d.status}, received ${seen}×, ${tries} attempt rows, attemptCount ${d.attempt_count}`,
        );
      }
    }
    const known = new Set(deliveries.map((d) => d.id));
    for (const whId of rx.byWebhookId.keys()) if (!known.has(whId)) problems.push(`received unknown ${whId}`);
    return { deliveries: deliveries.length, received: rx.receipts.length, problems };
  }

  before(async () => {
    db = await createDatabase('postgres');
    const created = await cli(db.env, 'brands', 'create', '--name', 'Scale Out');
    brandId = created.brand.id;
    apiKey = created.apiKey;
    const env = {
      ...db.env,
      REDIS_URL: REDIS_URL as string,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_TIMEOUT: '5s',
      WEBHOOK_RETRY_DELAYS: '100ms,200ms,300ms,400ms,500ms',
      RATE_LIMIT_PER_MINUTE: '10000000',
    };
    apis = [
      new ServiceProcess('api-1', env, 'api', await freePort()),
      new ServiceProcess('api-2', env, 'api', await freePort()),
    ];
    const workers = [
      new ServiceProcess('worker-1', env, 'worker', await freePort()),
      new ServiceProcess('worker-2', env, 'worker', await freePort()),
    ];
    processes.push(...apis, ...workers);
    await Promise.all(processes.map((p) => p.start(60_000)));

    receiver = await Receiver.start();
    const catalogue = await api(via(0), null, 'GET', '/api/public/webhook-events');
    const events = (catalogue.body.data as Array<{ name: string }>).map((e) => e.name);
    const sub = await api(via(1), apiKey, 'POST', '/api/public/webhooks', { url: receiver.url, events });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    subscriptionId = sub.body.id;
  });

  after(async () => {
    console.log(`[chaos scale-out] startMs ${processes.map((p) => `${p.name}=${p.startMs.join('/')}`).join(' ')}`);
    const problems = processes.flatMap((p) => [...p.problems].map(([msg, n]) => `${p.name}: ${msg} ×${n}`));
    if (problems.length > 0) console.log(`[chaos scale-out] service warnings ${problems.join('; ')}`);
    await Promise.all(processes.map((p) => p.kill9().catch(() => {})));
    await receiver?.close().catch(() => {});
    await db?.drop().catch(() => {});
    console.log(`[chaos scale-out] totalMs=${Date.now() - began}`);
  });

  it('claims each delivery by one worker at a time: one attempt and one receipt per wh_ id', {
    timeout: 60_000,
  }, async () => {
    const offerId = await createOffer({});
    const partnerId = await createPartner();
    const responses = await pooled(
      16,
      Array.from(
        { length: 200 },
        (_, i) => () =>
          api(
            via(i),
            apiKey,
            'POST',
            '/api/v1/conversions',
            { offerId, partnerId, externalTxnId: `scale-${i}` },
            30_000,
          ),
      ),
    );
    assert.deepEqual(
      responses.filter((r) => r.status !== 201).map((r) => `${r.status} ${JSON.stringify(r.body)}`),
      [],
    );
    const audit = await auditExactlyOnce();
    const ms = responses.map((r) => r.ms).sort((x, y) => x - y);
    const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0);
    console.log(
      `[chaos scale-out] (a) deliveries=${audit.deliveries} received=${audit.received} problems=${audit.problems.length}` +
        ` conversionLatencyMs p50=${at(0.5)} p99=${at(0.99)} max=${at(1)}`,
    );
    assert.ok(audit.deliveries >= 200, `every conversion made a delivery (${audit.deliveries})`);
    assert.deepEqual(audit.problems.slice(0, 20), []);
    assert.ok(subscriptionId);
  });

  it('approves held conversions once: one conversion.approved per conversion', { timeout: 60_000 }, async () => {
    const offerId = await createOffer({ conversionStatus: 'pending', holdSeconds: 1 });
    const partnerId = await createPartner();
    const responses = await pooled(
      10,
      Array.from(
        { length: 30 },
        (_, i) => () => api(via(i), apiKey, 'POST', '/api/v1/conversions', { offerId, partnerId }),
      ),
    );
    assert.equal(responses.length, 30);
    assert.ok(
      responses.every((r) => r.status === 201 && r.body.status === 'pending'),
      'all recorded pending',
    );
    const ids = new Set(responses.map((r) => r.body.id as string));
    await waitFor(
      'every held conversion to be approved',
      async () => {
        const [row] = await database().query<{ n: string | number }>(
          `select count(*) as n from conversions where offer_id = '${offerId}' and status = 'approved'`,
        );
        return Number(row?.n) === 30;
      },
      20_000,
    );
    // Let both workers' hold jobs (every 1 s) run a few more times.
    await sleep(2500);
    const rows = await database().query<{ id: string; status: string; approved_by: string }>(
      `select id, status, approved_by from conversions where offer_id = '${offerId}'`,
    );
    const events = await database().query<{ payload: string }>(
      "select payload from events where type = 'conversion.approved'",
    );
    const approvals = new Map<string, number>();
    for (const e of events) {
      const data = (JSON.parse(e.payload) as { data: { conversionId: string; offerId: string } }).data;
      if (data.offerId === offerId) approvals.set(data.conversionId, (approvals.get(data.conversionId) ?? 0) + 1);
    }
    const wrong = [...ids].filter((id) => approvals.get(id) !== 1).map((id) => `${id}: ${approvals.get(id) ?? 0}`);
    console.log(
      `[chaos scale-out] (b) held=${ids.size} approved=${rows.filter((r) => r.status === 'approved').length}` +
        ` approvedEvents=${[...approvals.values()].reduce((a, b) => a + b, 0)}`,
    );
    assert.equal(rows.length, 30);
    assert.ok(rows.every((r) => r.status === 'approved' && r.approved_by === 'hold_expired'));
    assert.deepEqual(wrong, [], 'exactly one conversion.approved per conversion');
    assert.equal(approvals.size, 30);
  });

  it('fires cap.reached once and marks the rest capExceeded across both API processes', {
    timeout: 60_000,
  }, async () => {
    const offerId = await createOffer({ caps: { daily: 10 } });
    const partnerId = await createPartner();
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api(via(i), apiKey, 'POST', '/api/v1/conversions', { offerId, partnerId, externalTxnId: `cap-${i}` }),
      ),
    );
    assert.deepEqual(
      responses.filter((r) => r.status !== 201).map((r) => `${r.status} ${JSON.stringify(r.body)}`),
      [],
    );
    const exceeded = responses.filter((r) => r.body.capExceeded === true).length;
    const events = await database().query<{ payload: string }>("select payload from events where type = 'cap.reached'");
    const reached = events
      .map(
        (e) => (JSON.parse(e.payload) as { data: { offerId: string; cap: string; limit: number; count: number } }).data,
      )
      .filter((d) => d.offerId === offerId);
    const [counter] = await database().query<{ count: number | string }>(
      `select count from cap_counters where offer_id = '${offerId}' and cap = 'daily'`,
    );
    console.log(
      `[chaos scale-out] (c) conversions=${responses.length} capExceeded=${exceeded} capReachedEvents=${reached.length}` +
        ` counter=${counter?.count}`,
    );
    assert.equal(reached.length, 1, 'one cap.reached');
    assert.deepEqual(
      { cap: reached[0]?.cap, limit: reached[0]?.limit, count: reached[0]?.count },
      { cap: 'daily', limit: 10, count: 10 },
    );
    assert.equal(exceeded, 20, 'the 20 after the 10th are capExceeded');
    assert.equal(Number(counter?.count), 30);
  });

  it('shares a per-key rate limit across both API processes: exactly 10 pass, then 429', {
    timeout: 60_000,
  }, async () => {
    const created = await cli(database().env, 'keys', 'create', '--brand', brandId, '--rate-limit', '10');
    const limitedKey = created.apiKey as string;
    const responses: ApiResponse[] = [];
    for (let i = 0; i < 20; i++) responses.push(await api(via(i), limitedKey, 'GET', '/api/v1/brand'));
    const statuses = responses.map((r) => r.status);
    console.log(`[chaos scale-out] (d) statuses=${statuses.join(',')}`);
    assert.deepEqual(statuses, [...Array(10).fill(200), ...Array(10).fill(429)]);
    for (const r of responses.slice(10)) {
      assertError(r, 429, 'rate_limit_exceeded', 'over the shared limit');
      assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
      assert.equal(r.headers.get('ratelimit-limit'), '10');
    }
  });

  it('over the whole run, every delivery was attempted once and received once', { timeout: 60_000 }, async () => {
    const audit = await auditExactlyOnce();
    console.log(
      `[chaos scale-out] (all) deliveries=${audit.deliveries} received=${audit.received} problems=${audit.problems.length}`,
    );
    assert.deepEqual(audit.problems.slice(0, 20), []);
  });
});
