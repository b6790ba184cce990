import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ManualClock } from '../../src/clock.js';
import { openAnswer, sealAnswer, sealingKeyOf, storedKeyOf } from '../../src/db/idempotencyAtRest.js';
import { sweepIdempotencyKeys } from '../../src/http/idempotency.js';
import { createTestDatabase, createTestEnv, migrateTestDatabaseTo, type TestEnv, testedDialects } from '../helpers.js';
import { listen, type WireClient } from './http.js';

const DAY_MS = 24 * 3600 * 1000;

for (const dialect of testedDialects()) {
  describe(`Idempotency-Key over HTTP (${dialect})`, () => {
    let env: TestEnv;
    let http: WireClient;
    let partnerId: string;
    let offerId: string;
    const keyed = (key: string) => ({ 'idempotency-key': key });
    const offersNamed = async (name: string) =>
      (await http.call('GET', '/api/v1/offers?limit=100')).body.data.filter((o: { name: string }) => o.name === name);

    before(async () => {
      env = await createTestEnv(dialect);
      http = await listen(env);
      partnerId = (await http.call('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } })).body
        .id;
      offerId = (
        await http.call('POST', '/api/v1/offers', { body: { name: 'Base', destinationUrl: 'https://x.example/' } })
      ).body.id;
    });
    after(() => env.close());

    it('replays the first answer for the same key and body, without doing the work again', async () => {
      const key = randomUUID();
      const body = { name: 'Once', destinationUrl: 'https://shop.example/once' };
      const first = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const again = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, first.body);
      assert.equal((await offersNamed('Once')).length, 1);
    });

    it('stores the answer with the work, in the same transaction, sealed under the key', async () => {
      const key = randomUUID();
      const res = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Stored', destinationUrl: 'https://shop.example/s' },
        headers: keyed(key),
      });
      const row = await env.ctx.db.read
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('key', '=', storedKeyOf(key))
        .executeTakeFirstOrThrow();
      assert.equal(row.scope, `brand:${env.brand.id}`);
      assert.equal(row.sealed_under, null);
      assert.equal(row.status_code, 201);
      assert.equal(row.work_committed, 1);
      assert.ok(!row.response_body?.includes(res.body.id), 'the answer is not stored in clear');
      const opened = openAnswer(sealingKeyOf(row.scope, key), row.response_body ?? '');
      assert.deepEqual(JSON.parse(opened ?? ''), res.body);
      assert.equal(openAnswer(sealingKeyOf(row.scope, randomUUID()), row.response_body ?? ''), null);
    });

    it('replays a portal invite link that the database does not hold in clear', async () => {
      const key = randomUUID();
      const url = `/api/v1/partners/${partnerId}/invite`;
      const first = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(first.status, 201);
      const token = new URL(first.body.url).searchParams.get('token') ?? '';
      assert.ok(token.length > 20);
      const again = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.url, first.body.url);
      const rows = await env.ctx.db.read.selectFrom('idempotency_keys').selectAll().execute();
      const stored = JSON.stringify(rows);
      assert.ok(stored.includes(storedKeyOf(key)), 'the key is stored, hashed');
      assert.ok(!stored.includes(key), 'the Idempotency-Key is not stored as sent');
      assert.ok(!stored.includes(token), 'the invite token is not stored in clear');
    });

    it('answers 422 idempotency_key_reused for the same key with another body', async () => {
      const key = randomUUID();
      await http.call('POST', '/api/v1/offers', {
        body: { name: 'First', destinationUrl: 'https://shop.example/1' },
        headers: keyed(key),
      });
      const res = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Second', destinationUrl: 'https://shop.example/2' },
        headers: keyed(key),
      });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.code, 'idempotency_key_reused');
      assert.equal(res.body.error.requestId, res.headers.get('x-request-id'));
      assert.equal((await offersNamed('Second')).length, 0);
    });

    it("replays a retry sent through the brand's other API key (a key rotation), as Stripe keeps keys per account", async () => {
      const { insertApiKey } = await import('../../src/modules/apiKeys/service.js');
      const { secret } = await env.ctx.db.transact((trx) => insertApiKey(trx, env.clock, { brandId: env.brand.id }));
      const key = randomUUID();
      const body = { name: 'Rotated', destinationUrl: 'https://shop.example/r' };
      const first = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      const retry = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key), key: secret });
      assert.equal(first.status, 201);
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(retry.body, first.body);
      assert.equal((await offersNamed('Rotated')).length, 1);
      const other = await http.call('POST', '/api/v1/offers', {
        body: { ...body, name: 'Rotated, another request' },
        headers: keyed(key),
        key: secret,
      });
      assert.equal(other.status, 422);
      assert.equal(other.body.error.code, 'idempotency_key_reused');
    });

    it('takes the same request to the same operation with a trailing slash as the same request', async () => {
      const key = randomUUID();
      const body = { name: 'Slash', destinationUrl: 'https://shop.example/slash' };
      const first = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      const retry = await http.call('POST', '/api/v1/offers/', { body, headers: keyed(key) });
      assert.equal(first.status, 201);
      assert.equal(retry.status, 201, JSON.stringify(retry.body));
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(retry.body, first.body);
      assert.equal((await offersNamed('Slash')).length, 1);
      // Path parameters are part of the operation: the same key on another resource is another request.
      const approveKey = randomUUID();
      const conversion = await http.call('POST', '/api/v1/conversions', {
        body: { offerId, partnerId },
      });
      const approved = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/approve/`, {
        headers: keyed(approveKey),
      });
      assert.equal(approved.status, 200, JSON.stringify(approved.body));
      const again = await http.call('POST', `/api/v1/conversions/${conversion.body.id}/approve`, {
        headers: keyed(approveKey),
      });
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      const elsewhere = await http.call('POST', '/api/v1/conversions/conv_01J0000000000000000000000/approve', {
        headers: keyed(approveKey),
      });
      assert.equal(elsewhere.status, 422);
      assert.equal(elsewhere.body.error.code, 'idempotency_key_reused');
    });

    it('keeps keys apart per brand', async () => {
      const other = await env.createBrand('Other');
      const key = randomUUID();
      const body = { name: 'Shared key', destinationUrl: 'https://shop.example/k' };
      const mine = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      const theirs = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key), key: other.apiKey });
      assert.equal(mine.status, 201);
      assert.equal(theirs.status, 201);
      assert.equal(theirs.headers.get('idempotent-replayed'), null);
      assert.notEqual(theirs.body.id, mine.body.id);
    });

    it('replays a successful approve instead of answering 409 to the retry', async () => {
      const conversion = await http.call('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      const key = randomUUID();
      const url = `/api/v1/conversions/${conversion.body.id}/approve`;
      const first = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(first.status, 200);
      const retry = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.equal(retry.body.status, 'approved');
      const eventsFired = await env.ctx.db.read
        .selectFrom('events')
        .select('id')
        .where('type', '=', 'conversion.approved')
        .where('brand_id', '=', env.brand.id)
        .where('payload', 'like', `%${conversion.body.id}%`)
        .execute();
      assert.equal(eventsFired.length, 1, 'conversion.approved fired once');
      const withoutKey = await http.call('POST', url);
      assert.equal(withoutKey.status, 409);
    });

    it('replays an error answer too (a conflict stays a conflict)', async () => {
      const conversion = await http.call('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      await http.call('POST', `/api/v1/conversions/${conversion.body.id}/reject`);
      const key = randomUUID();
      const url = `/api/v1/conversions/${conversion.body.id}/approve`;
      const first = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(first.status, 409);
      const retry = await http.call('POST', url, { headers: keyed(key) });
      assert.equal(retry.status, 409);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      // The same error, naming the request that got it (its X-Request-Id), as every error does.
      assert.deepEqual({ ...retry.body.error, requestId: undefined }, { ...first.body.error, requestId: undefined });
      assert.equal(retry.body.error.requestId, retry.headers.get('x-request-id'));
      assert.notEqual(retry.body.error.requestId, first.body.error.requestId);
    });

    it('takes the same JSON members in another order as the same request', async () => {
      const key = randomUUID();
      const first = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Ordered', destinationUrl: 'https://shop.example/o', caps: { daily: 5, weekly: 9 } },
        headers: keyed(key),
      });
      assert.equal(first.status, 201);
      const again = await http.call('POST', '/api/v1/offers', {
        body: { caps: { weekly: 9, daily: 5 }, destinationUrl: 'https://shop.example/o', name: 'Ordered' },
        headers: keyed(key),
      });
      assert.equal(again.status, 201, JSON.stringify(again.body));
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal((await offersNamed('Ordered')).length, 1);
    });

    it('keeps the externalTxnId rule: a new key with a known transaction id returns the existing conversion', async () => {
      const body = { offerId, partnerId, externalTxnId: `order-${randomUUID()}` };
      const first = await http.call('POST', '/api/v1/conversions', { body, headers: keyed(randomUUID()) });
      const second = await http.call('POST', '/api/v1/conversions', { body, headers: keyed(randomUUID()) });
      assert.equal(first.status, 201);
      assert.equal(second.status, 200);
      assert.equal(second.body.id, first.body.id);
      assert.equal(second.headers.get('idempotent-replayed'), null);
    });

    it('creates exactly one resource for parallel identical requests', async () => {
      const key = randomUUID();
      const body = { name: 'Parallel', destinationUrl: 'https://shop.example/p' };
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => http.call('POST', '/api/v1/offers', { body, headers: keyed(key) })),
      );
      const created = answers.filter((a) => a.status === 201);
      const busy = answers.filter((a) => a.status === 409);
      assert.equal(created.length + busy.length, answers.length, JSON.stringify(answers.map((a) => a.status)));
      assert.ok(created.length >= 1);
      for (const a of busy) assert.equal(a.body.error.code, 'idempotency_key_in_use');
      assert.equal(new Set(created.map((a) => a.body.id)).size, 1, 'every 201 is the same offer');
      assert.equal((await offersNamed('Parallel')).length, 1);
    });

    /** Leaves `key` as a request still running (or cut off) leaves it: claimed for 60 s, its offer not created. */
    async function claimedWithoutWork(key: string, body: Record<string, unknown>): Promise<void> {
      const first = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      await env.ctx.db.transact(async (trx) => {
        await trx
          .updateTable('idempotency_keys')
          .set({ status_code: null, response_body: null, work_committed: 0, locked_until: env.clock.now() + 60_000 })
          .where('key', '=', storedKeyOf(key))
          .execute();
        await trx.deleteFrom('offers').where('id', '=', first.body.id).execute();
      });
    }

    it('answers 409 idempotency_key_in_use while the first request runs, and takes over a dead claim after its lease', async () => {
      const key = randomUUID();
      const body = { name: 'Running', destinationUrl: 'https://shop.example/r' };
      // Claim the key as a first request does before its work (the request is still running).
      await claimedWithoutWork(key, body);
      const busy = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(busy.status, 409);
      assert.equal(busy.body.error.code, 'idempotency_key_in_use');
      assert.equal((await offersNamed('Running')).length, 0);
      // The claimer died without committing anything: once its lease ends the key runs afresh.
      env.clock.advance(61_000);
      const retried = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(retried.status, 201);
      assert.equal((await offersNamed('Running')).length, 1);
    });

    it('releases the claims of requests cut off by a crash when a server opens the SQLite database', async () => {
      const { releaseAbandonedClaims } = await import('../../src/http/idempotency.js');
      const key = randomUUID();
      const body = { name: 'Cut off', destinationUrl: 'https://shop.example/c' };
      // As the crash left it: claimed, nothing committed, the lease still running.
      await claimedWithoutWork(key, body);
      assert.equal((await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) })).status, 409);
      assert.ok((await releaseAbandonedClaims(env.ctx)) >= 1);
      const retried = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(retried.status, 201, 'the retry runs at once, not after the lease');
      assert.equal((await offersNamed('Cut off')).length, 1);
      assert.equal(await releaseAbandonedClaims(env.ctx), 0, 'finished keys are left alone');
    });

    it('never runs again a key whose work committed, even without a stored answer', async () => {
      const key = randomUUID();
      const body = { name: 'Committed', destinationUrl: 'https://shop.example/c' };
      await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      await env.ctx.db.transact((trx) =>
        trx
          .updateTable('idempotency_keys')
          .set({ status_code: null, response_body: null, locked_until: 0 })
          .where('key', '=', storedKeyOf(key))
          .execute(),
      );
      const res = await http.call('POST', '/api/v1/offers', { body, headers: keyed(key) });
      assert.equal(res.status, 409);
      assert.equal((await offersNamed('Committed')).length, 1);
    });

    it('forgets keys after 24 hours and sweeps them', async () => {
      const key = randomUUID();
      await http.call('POST', '/api/v1/offers', {
        body: { name: 'Old', destinationUrl: 'https://shop.example/o' },
        headers: keyed(key),
      });
      env.clock.advance(DAY_MS + 1000);
      const reused = await http.call('POST', '/api/v1/offers', {
        body: { name: 'New after a day', destinationUrl: 'https://shop.example/n' },
        headers: keyed(key),
      });
      assert.equal(reused.status, 201, 'an expired key is a new key');
      assert.equal(reused.headers.get('idempotent-replayed'), null);
      env.clock.advance(DAY_MS + 1000);
      assert.ok((await sweepIdempotencyKeys(env.ctx)) >= 1);
      const left = await env.ctx.db.read.selectFrom('idempotency_keys').select('key').execute();
      assert.equal(left.length, 0);
    });

    it('works on the public application form, keyed by client', async () => {
      const key = randomUUID();
      const body = { brandSlug: env.brand.slug, name: 'Applicant', email: 'a@example.com' };
      const first = await http.call('POST', '/api/public/partners/apply', { body, key: null, headers: keyed(key) });
      assert.equal(first.status, 201);
      const again = await http.call('POST', '/api/public/partners/apply', { body, key: null, headers: keyed(key) });
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.id, first.body.id);
    });

    it('refuses a malformed key and writes nothing without one', async () => {
      const bad = await http.call('POST', '/api/v1/offers', {
        body: { name: 'Bad key', destinationUrl: 'https://shop.example/b' },
        headers: keyed('x'.repeat(256)),
      });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error.details[0].path, 'header.Idempotency-Key');
      const before = (await env.ctx.db.read.selectFrom('idempotency_keys').select('key').execute()).length;
      await http.call('POST', '/api/v1/offers', { body: { name: 'No key', destinationUrl: 'https://shop.example/n' } });
      const afterCount = (await env.ctx.db.read.selectFrom('idempotency_keys').select('key').execute()).length;
      assert.equal(afterCount, before);
    });
  });

  describe(`Idempotency keys stored per API key before migration 0041 (${dialect})`, () => {
    it("moves them to the key's brand: a retry through another key of the brand replays, the earlier of two copies wins", async () => {
      const database = await createTestDatabase(dialect);
      let env: TestEnv | undefined;
      try {
        await migrateTestDatabaseTo(database, '0040_rate_limit_seconds');
        const clock = new ManualClock(Date.now());
        const { createBrandWithFirstKey } = await import('../../src/modules/brands/service.js');
        const { insertApiKey } = await import('../../src/modules/apiKeys/service.js');
        const { brand, key: oldKey } = await database.db.admin
          .transaction()
          .execute((trx) => createBrandWithFirstKey(trx, clock, { name: 'Legacy' }));
        const { secret: newSecret, key: newKey } = await database.db.admin
          .transaction()
          .execute((trx) => insertApiKey(trx, clock, { brandId: brand.id }));
        const idempotencyKey = randomUUID();
        const body = { name: 'Before', destinationUrl: 'https://shop.example/b' };
        // As http/idempotency.ts fingerprinted a request: method, URL and the body's members in key order.
        const fingerprint = createHash('sha256')
          .update('POST /api/v1/offers\n')
          .update(JSON.stringify(Object.fromEntries(Object.entries(body).sort())))
          .digest('hex');
        const stored = (scope: string, answer: string, createdAt: number) => ({
          scope,
          key: storedKeyOf(idempotencyKey),
          fingerprint,
          status_code: 201,
          response_body: sealAnswer(sealingKeyOf(scope, idempotencyKey), answer),
          work_committed: 1,
          locked_until: 0,
          created_at: createdAt,
        });
        const firstAnswer = JSON.stringify({ id: 'off_storedfirst', name: 'Before' });
        await database.db.admin
          .insertInto('idempotency_keys')
          .values([
            stored(oldKey.id, firstAnswer, clock.now() - 2000),
            // The same key sent again through the other key did the work twice: the later copy goes.
            stored(newKey.id, JSON.stringify({ id: 'off_storedsecond', name: 'Before' }), clock.now() - 1000),
            { ...stored('ip:127.0.0.1', '{}', clock.now()), key: storedKeyOf('form') },
          ] as never)
          .execute();
        env = await createTestEnv(dialect, { database, clock });
        const rows = await env.ctx.db.read.selectFrom('idempotency_keys').selectAll().orderBy('scope').execute();
        assert.deepEqual(
          rows.map((r) => [r.scope, r.sealed_under]),
          [
            [`brand:${brand.id}`, oldKey.id],
            ['ip:127.0.0.1', null],
          ],
        );
        const http = await listen(env);
        const replay = await http.call('POST', '/api/v1/offers', {
          body,
          key: newSecret,
          headers: { 'idempotency-key': idempotencyKey },
        });
        assert.equal(replay.status, 201);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, JSON.parse(firstAnswer));
      } finally {
        await env?.close();
        await database.drop();
      }
    });
  });

  describe(`Idempotency keys stored before migration 0031 (${dialect})`, () => {
    it('replays an answer stored in clear before the upgrade, and leaves it hashed and sealed', async () => {
      const database = await createTestDatabase(dialect);
      let env: TestEnv | undefined;
      try {
        await migrateTestDatabaseTo(database, '0030_throttle_last_send');
        const key = randomUUID();
        const body = { brandSlug: 'legacy', name: 'Applicant', email: 'a@example.com' };
        // As http/idempotency.ts fingerprinted a request: method, URL and the body's members in key order.
        const canonical = JSON.stringify(Object.fromEntries(Object.entries(body).sort()));
        const fingerprint = createHash('sha256')
          .update(`POST /api/public/partners/apply\n`)
          .update(canonical)
          .digest('hex');
        const answer = JSON.stringify({ id: 'prt_storedbeforeupgrade', status: 'applicant' });
        await sql`
          insert into idempotency_keys (scope, key, fingerprint, status_code, response_body, work_committed, locked_until, created_at)
          values ('ip:127.0.0.1', ${key}, ${fingerprint}, 201, ${answer}, 1, 0, ${Date.now()})`.execute(
          database.db.admin,
        );
        // More keys than the migration copies at once, one of them claimed by a request still running.
        const others = Array.from({ length: 1200 }, (_, i) => ({
          scope: `key_${i % 7}`,
          key: `other-${i}`,
          fingerprint: 'f',
          status_code: i === 0 ? null : 200,
          response_body: i === 0 ? null : `{"n":${i}}`,
          work_committed: i === 0 ? 0 : 1,
          locked_until: 0,
          created_at: Date.now(),
        }));
        for (let i = 0; i < others.length; i += 200) {
          await database.db.admin
            .insertInto('idempotency_keys')
            .values(others.slice(i, i + 200))
            .execute();
        }
        env = await createTestEnv(dialect, { database, clock: new ManualClock(Date.now()) });
        const rows = await env.ctx.db.read.selectFrom('idempotency_keys').selectAll().execute();
        assert.equal(rows.length, 1201);
        const last = rows.find((r) => r.key === storedKeyOf('other-1199'));
        assert.equal(openAnswer(sealingKeyOf('key_2', 'other-1199'), last?.response_body ?? ''), '{"n":1199}');
        assert.equal(rows.find((r) => r.key === storedKeyOf('other-0'))?.response_body, null);
        const row = rows.find((r) => r.scope === 'ip:127.0.0.1');
        assert.equal(row?.key, storedKeyOf(key));
        assert.ok(!row?.response_body?.includes('prt_storedbeforeupgrade'));
        const http = await listen(env);
        const replay = await http.call('POST', '/api/public/partners/apply', {
          body,
          key: null,
          headers: { 'idempotency-key': key },
        });
        assert.equal(replay.status, 201);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, JSON.parse(answer));
      } finally {
        await env?.close();
        await database.drop();
      }
    });
  });

  describe(`Idempotency keys stored before the body was fingerprinted by its members (${dialect})`, () => {
    it('replays a retry of a request stored with its body hashed as sent, and still refuses another body', async () => {
      const database = await createTestDatabase(dialect);
      let env: TestEnv | undefined;
      try {
        // The schema of a build before a868816, which hashed JSON.stringify(body) in the order sent.
        await migrateTestDatabaseTo(database, '0030_throttle_last_send');
        const clock = new ManualClock(Date.now());
        const { createBrandWithFirstKey } = await import('../../src/modules/brands/service.js');
        const { key: apiKey, secret } = await database.db.admin
          .transaction()
          .execute((trx) => createBrandWithFirstKey(trx, clock, { name: 'Before sorting' }));
        // Members deliberately out of alphabetical order, as a client sends them.
        const body = { name: 'Unsorted', destinationUrl: 'https://shop.example/u' };
        const asSent = (sentBody: unknown) =>
          createHash('sha256').update('POST /api/v1/offers\n').update(JSON.stringify(sentBody)).digest('hex');
        const answer = JSON.stringify({ id: 'off_storedunsorted', name: 'Unsorted' });
        const stored = (key: string) => ({
          scope: apiKey.id,
          key,
          fingerprint: asSent(body),
          status_code: 201,
          response_body: answer,
          work_committed: 1,
          locked_until: 0,
          created_at: clock.now() - 1000,
        });
        const sameKey = randomUUID();
        const otherBodyKey = randomUUID();
        await database.db.admin
          .insertInto('idempotency_keys')
          .values([stored(sameKey), stored(otherBodyKey)] as never)
          .execute();
        env = await createTestEnv(dialect, { database, clock });
        const http = await listen(env);
        const replay = await http.call('POST', '/api/v1/offers', {
          body,
          key: secret,
          headers: { 'idempotency-key': sameKey },
        });
        assert.equal(replay.status, 201, JSON.stringify(replay.body));
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, JSON.parse(answer));
        const other = await http.call('POST', '/api/v1/offers', {
          body: { name: 'Unsorted', destinationUrl: 'https://shop.example/other' },
          key: secret,
          headers: { 'idempotency-key': otherBodyKey },
        });
        assert.equal(other.status, 422);
        assert.equal(other.body.error.code, 'idempotency_key_reused');
        const offers = await http.call('GET', '/api/v1/offers?limit=100', { key: secret });
        assert.deepEqual(offers.body.data, [], 'no retry did the work again');
      } finally {
        await env?.close();
        await database.drop();
      }
    });
  });
}
