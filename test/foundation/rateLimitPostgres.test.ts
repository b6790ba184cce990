/**
 * Without REDIS_URL, processes on one PostgreSQL database count rate limits together in it
 * (issue #12, point 8): two app instances, each with its own pool, as two processes would be.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { WINDOW_MS } from '../../src/http/rateLimit.js';
import {
  anotherHandle,
  createTestDatabase,
  createTestEnv,
  describeOrSkip,
  PG_SKIP_REASON,
  PG_URL,
  type TestDatabase,
  type TestEnv,
} from '../helpers.js';

const LIMIT = 20;

describeOrSkip('rate limits counted in PostgreSQL without Redis', { skip: PG_URL ? false : PG_SKIP_REASON }, () => {
  let database: TestDatabase;
  let secondHandle: TestDatabase;
  let first: TestEnv;
  let second: TestEnv;
  before(async () => {
    database = await createTestDatabase('postgres');
    const env = { RATE_LIMIT_PER_MINUTE: String(LIMIT), REDIS_URL: '' };
    first = await createTestEnv('postgres', { env, database });
    secondHandle = anotherHandle(database);
    second = await createTestEnv('postgres', { env, database: secondHandle, clock: first.clock });
  });
  after(async () => {
    await first.close();
    await second.close();
    await secondHandle.drop();
    await first.ctx.db.close();
    await database.drop();
  });

  const windowRows = () => first.ctx.db.read.selectFrom('rate_limit_windows').selectAll().execute();

  it('lets exactly the limit through across two instances under concurrent requests', async () => {
    const { apiKey } = await first.createBrand('Concurrent');
    const responses = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) =>
        (i % 2 === 0 ? first : second).request('GET', '/api/v1/brand', { key: apiKey }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, LIMIT);
    assert.equal(statuses.filter((s) => s === 429).length, 2 * LIMIT);
    const remaining = responses.filter((r) => r.status === 200).map((r) => Number(r.headers['ratelimit-remaining']));
    assert.deepEqual(
      remaining.sort((a, b) => a - b),
      Array.from({ length: LIMIT }, (_, i) => i),
      'each request saw its own place in the count',
    );
  });

  it('answers 429 with Retry-After from the shared window on either instance', async () => {
    const { apiKey } = await first.createBrand('Window');
    for (let i = 0; i < LIMIT; i++) await first.request('GET', '/api/v1/brand', { key: apiKey });
    first.clock.advance(15_000);
    const blocked = await second.request('GET', '/api/v1/brand', { key: apiKey });
    assert.equal(blocked.status, 429);
    assert.equal(blocked.headers['retry-after'], '45');
    first.clock.advance(45_000);
    const freed = await second.request('GET', '/api/v1/brand', { key: apiKey });
    assert.equal(freed.status, 200);
    assert.equal(freed.headers['ratelimit-remaining'], String(LIMIT - 1));
  });

  it('keeps the windows in an UNLOGGED table (no WAL flush on the path of every keyed request)', async () => {
    const { rows } = await sql<{ relpersistence: string }>`
      select relpersistence from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relname = 'rate_limit_windows' and n.nspname = ${database.schema}`.execute(first.ctx.db.read);
    assert.deepEqual(rows, [{ relpersistence: 'u' }]);
  });

  it('deletes the rows of keys with nothing counted about once a minute, keeping the others', async () => {
    const { apiKey } = await first.createBrand('Sweep');
    first.clock.advance(WINDOW_MS + 1);
    await first.request('GET', '/api/v1/brand', { key: apiKey });
    const newest = Math.floor(first.clock.now() / 1000);
    await first.request('GET', '/api/v1/brand', { key: apiKey });
    // The sweep runs beside the request, not before its answer: wait for it.
    for (let i = 0; i < 50; i++) {
      if ((await windowRows()).every((row) => Number(row.second) === newest)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const rows = await windowRows();
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(Number(rows[0]?.second), newest);
    assert.equal(rows[0]?.counts[0], 2);
  });

  it('refuses a burst at the end of what was a fixed window across two instances, and frees the requests a second at a time', async () => {
    const { apiKey } = await first.createBrand('Boundary');
    first.clock.set(Math.ceil(first.clock.now() / 1000) * 1000);
    assert.equal((await first.request('GET', '/api/v1/brand', { key: apiKey })).status, 200);
    first.clock.advance(57_000);
    const before = await Promise.all(
      Array.from({ length: LIMIT - 1 }, (_, i) =>
        (i % 2 ? first : second).request('GET', '/api/v1/brand', { key: apiKey }),
      ),
    );
    assert.equal(before.filter((r) => r.status === 200).length, LIMIT - 1);
    first.clock.advance(3_500);
    const after = await Promise.all(
      Array.from({ length: LIMIT }, (_, i) =>
        (i % 2 ? first : second).request('GET', '/api/v1/brand', { key: apiKey }),
      ),
    );
    assert.equal(after.filter((r) => r.status === 200).length, 1, 'only the first request stopped counting');
    const blocked = after.find((r) => r.status === 429);
    assert.equal(blocked?.headers['retry-after'], '57', 'the other requests count until 57 s from now (rounded up)');
    first.clock.advance(56_000);
    assert.equal((await second.request('GET', '/api/v1/brand', { key: apiKey })).status, 429);
    first.clock.advance(1_000);
    const freed = await second.request('GET', '/api/v1/brand', { key: apiKey });
    assert.equal(freed.status, 200);
    // The 19 of 57 s stopped counting; the one that passed at 60.5 s still counts.
    assert.equal(freed.headers['ratelimit-remaining'], String(LIMIT - 2));
  });
});
