/**
 * Crash safety (issue #6, part 1): the real service under a steady load of conversions,
 * partners and clicks, with two subscribed receivers (one answers 500 to the first attempt
 * of every delivery), is killed with SIGKILL at random moments and restarted. Afterwards
 * every acknowledged write is in the database, every event has exactly one delivery per
 * matching subscription, every delivery is final, and receivers saw every wh_ id with the
 * same evt_ id and body bytes on every repeat — and all of that within 5 s of the last
 * restart: a killed worker's leases end when its heartbeat stops, not when they expire
 * (issue #18 part 3). SQLite always; PostgreSQL with
 * TEST_DATABASE_URL (a fresh database per run: the server always uses `public`).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { testedDialects } from '../helpers.js';
import {
  api,
  auditDeliveries,
  auditOutbox,
  type ChaosDatabase,
  cli,
  createDatabase,
  freePort,
  type Kind,
  LoadGenerator,
  lostWrites,
  Receiver,
  randomBetween,
  ServiceProcess,
  sleep,
  unfinishedDeliveries,
  waitFor,
} from './harness.js';

// Without TEST_DATABASE_URL the PostgreSQL run is reported as skipped, with the reason.
const KINDS: Kind[] = testedDialects();
const KILLS = 3;
/** WEBHOOK_TIMEOUT; a lease lasts this (twice for a hand-off) + 30 s, far longer than RECOVERY_MS. */
const WEBHOOK_TIMEOUT_MS = 1000;
/** Every acknowledged event is delivered this soon after the restarted service is ready. */
const RECOVERY_MS = 5000;
const START_TIMEOUT_MS = 120_000;

for (const kind of KINDS) {
  describe(`crash safety under kill -9 (${kind})`, () => {
    let db: ChaosDatabase | null = null;
    let service: ServiceProcess | null = null;
    let load: LoadGenerator | null = null;
    const receivers: Receiver[] = [];

    after(async () => {
      await load?.stop().catch(() => {});
      await service?.kill9().catch(() => {});
      for (const receiver of receivers) await receiver.close().catch(() => {});
      await db?.drop().catch(() => {});
    });

    it('keeps every acknowledged write and finishes every delivery within 5 s of the restart after repeated kill -9', {
      timeout: 600_000,
    }, async () => {
      const began = Date.now();
      db = await createDatabase(kind);
      const { apiKey } = await cli(db.env, 'brands', 'create', '--name', `Chaos ${kind}`);
      const env = {
        ...db.env,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT: `${WEBHOOK_TIMEOUT_MS}ms`,
        WEBHOOK_RETRY_DELAYS: '100ms,200ms,300ms,400ms,500ms',
        RATE_LIMIT_PER_MINUTE: '10000000',
      };
      const svc = new ServiceProcess(`serve-${kind}`, env, 'all', await freePort());
      service = svc;
      await svc.start(START_TIMEOUT_MS);

      // Two receivers: A takes every event and answers 200; B takes conversions and partners
      // and answers 500 to the first attempt of each delivery, forcing a retry of each.
      const all = await Receiver.start();
      const flaky = await Receiver.start({ failFirstAttempt: true });
      receivers.push(all, flaky);
      const catalogue = await api(svc.baseUrl, null, 'GET', '/api/public/webhook-events');
      const eventNames = (catalogue.body.data as Array<{ name: string }>).map((e) => e.name);
      const subA = await api(svc.baseUrl, apiKey, 'POST', '/api/public/webhooks', { url: all.url, events: eventNames });
      const subB = await api(svc.baseUrl, apiKey, 'POST', '/api/public/webhooks', {
        url: flaky.url,
        events: ['conversion.created', 'partner.approved'],
        secret: 'whsec_chaos_test_secret',
      });
      assert.equal(subA.status, 201, JSON.stringify(subA.body));
      assert.equal(subB.status, 201, JSON.stringify(subB.body));
      const byReceiver = new Map([
        [subA.body.id as string, all],
        [subB.body.id as string, flaky],
      ]);

      const offer = await api(svc.baseUrl, apiKey, 'POST', '/api/v1/offers', {
        name: 'Chaos offer',
        destinationUrl: 'https://shop.example.com/landing?click={click_id}',
        revenueCents: 1000,
        payoutCents: 300,
      });
      assert.equal(offer.status, 201, JSON.stringify(offer.body));
      const partnerIds: string[] = [];
      for (let i = 0; i < 3; i++) {
        const partner = await api(svc.baseUrl, apiKey, 'POST', '/api/v1/partners', {
          name: `Seed partner ${i}`,
          email: `seed-${i}@example.com`,
        });
        assert.equal(partner.status, 201, JSON.stringify(partner.body));
        partnerIds.push(partner.body.id);
      }

      const generator = new LoadGenerator(
        { baseUrl: () => svc.baseUrl, apiKey, offerId: offer.body.id, partnerIds },
        { intervalMs: 10, maxInflight: 16 },
      );
      load = generator;
      generator.start();
      let lastReady = 0;
      for (let i = 0; i < KILLS; i++) {
        await sleep(randomBetween(1000, 3000));
        await svc.kill9();
        // Start-up alone can take tens of seconds on a loaded machine; recovery is timed from ready.
        await svc.start(START_TIMEOUT_MS);
        lastReady = Date.now();
      }
      // The last kill left deliveries leased to a dead process. The load is told to stop at
      // once, and every delivery that existed when the service came back must be final within
      // RECOVERY_MS of that moment — timed while the load winds down, since waiting for its last
      // requests can itself take seconds on a busy machine.
      const stopping = generator.stop();
      await waitFor(
        `every delivery created before the restart to be final within ${RECOVERY_MS} ms of it`,
        async () => (await unfinishedDeliveries(db as ChaosDatabase, lastReady)) === 0,
        Math.max(0, lastReady + RECOVERY_MS - Date.now()),
        100,
      );
      const recoveredAt = Date.now();
      await stopping;
      const loadStopped = Date.now();
      // What the load sent after the restart is then delivered as usual.
      await waitFor(
        'every delivery to be final once the load stopped',
        async () => (await unfinishedDeliveries(db as ChaosDatabase)) === 0,
        30_000,
        100,
      );
      const finalAt = Date.now();

      const ack = generator.acknowledged;
      const { lost, count: lostCount } = await lostWrites(db, ack);
      const audit = await auditDeliveries(db, byReceiver);
      const outbox = await auditOutbox(db);
      const statuses = Object.fromEntries([...generator.statuses].sort());
      console.log(
        `[chaos crash ${kind}] kills=${svc.kills} sent=${generator.sent} acknowledged=${generator.acknowledgedCount}` +
          ` (conversions=${ack.conversions.size} partners=${ack.partners.size} clicks=${ack.clicks.size} bans=${ack.bans.size})` +
          ` found=${generator.acknowledgedCount - lostCount} lost=${lostCount} events=${audit.events}` +
          ` deliveries=${audit.deliveries} unfinished=${audit.unfinished.length} failed=${audit.failed}` +
          ` fanOutProblems=${audit.fanOutProblems.length} notReceived=${audit.notReceived.length}` +
          ` mismatches=${audit.mismatches.length} outboxProblems=${outbox.length} received=${audit.received} duplicates=${audit.duplicates}` +
          ` drainAfterLoadMs=${finalAt - loadStopped} recoveredMs=${recoveredAt - lastReady} startMs=${svc.startMs.join('/')} totalMs=${Date.now() - began}`,
      );
      console.log(`[chaos crash ${kind}] responses ${JSON.stringify(statuses)}`);
      const problems = Object.fromEntries(svc.problems);
      if (Object.keys(problems).length > 0)
        console.log(`[chaos crash ${kind}] service warnings ${JSON.stringify(problems)}`);

      assert.ok(
        ack.conversions.size >= 10 && ack.partners.size >= 3 && ack.clicks.size >= 3,
        'the load did run (acknowledged writes of every kind)',
      );
      assert.deepEqual(
        lost,
        { conversions: [], partners: [], clicks: [], bans: [] },
        'every acknowledged write is present',
      );
      assert.deepEqual(generator.oddities, [], 'no answer other than 2xx/302, 503 or a dropped connection');
      assert.deepEqual(outbox, [], 'every committed change has exactly its one event (transactional outbox)');
      assert.deepEqual(audit.fanOutProblems, [], 'one delivery per event and matching subscription');
      assert.deepEqual(audit.unfinished, [], 'every delivery is final');
      assert.ok(recoveredAt - lastReady <= RECOVERY_MS + 100, `final ${recoveredAt - lastReady} ms after the restart`);
      assert.equal(audit.failed, 0, 'the receivers always accept eventually, so nothing fails');
      assert.deepEqual(audit.notReceived, [], 'every succeeded delivery reached its receiver');
      assert.deepEqual(audit.mismatches, [], 'repeats carry the same evt_ id and body bytes');
    });
  });
}
