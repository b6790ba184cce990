/**
 * SQLite with a full disk. On SQLITE_FULL SQLite rolls the whole write transaction back
 * itself; the ROLLBACK that followed then failed ("cannot rollback - no transaction is
 * active") and that error replaced the real one, so an operator never read that the disk was
 * full. The disk is "full" here through `PRAGMA max_page_count` on the writer connection:
 * SQLite answers SQLITE_FULL, and rolls back, exactly as on a full file system.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type SQLite from 'better-sqlite3';
import { createTestEnv, type TestEnv } from '../helpers.js';

/** Comfortably more offers than a few free pages of the file can hold. */
const MAX_TRIES = 500;

/** The writer connection (private to Database: only a test may reach it). */
function writerOf(env: TestEnv): SQLite.Database {
  return (env.ctx.db as unknown as { writer: SQLite.Database }).writer;
}

/** Caps the database file at its current size, so the next write needing a page fails with SQLITE_FULL. */
function fillDisk(env: TestEnv): () => void {
  const writer = writerOf(env);
  const limit = writer.pragma('max_page_count', { simple: true });
  writer.pragma(`max_page_count = ${writer.pragma('page_count', { simple: true })}`);
  return () => writer.pragma(`max_page_count = ${limit}`);
}

const offerBody = (n: number) => ({ name: `Offer ${n} ${'x'.repeat(190)}`, destinationUrl: 'https://shop.example/a' });

describe('a full disk (SQLite)', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite', { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  after(() => env.close());

  it('fails the write with SQLITE_FULL itself, not with the rollback that followed it', async () => {
    const freeSpace = fillDisk(env);
    try {
      let failure: unknown = null;
      for (let n = 0; n < MAX_TRIES && !failure; n++) {
        await env.ctx.db
          .transact((trx) =>
            trx
              .insertInto('brands')
              .values({
                id: `brd_full${n}`,
                name: 'x'.repeat(2000),
                slug: `full-${n}`,
                timezone: 'UTC',
                currency: 'USD',
                fraud_threshold: 75,
                auto_ban_high_risk_clicks: null,
                auto_ban_window_minutes: null,
                created_at: 0,
                updated_at: 0,
              })
              .execute(),
          )
          .catch((error: unknown) => {
            failure = error;
          });
      }
      assert.ok(failure, `no write failed within ${MAX_TRIES} tries`);
      assert.equal((failure as { code?: unknown }).code, 'SQLITE_FULL', String(failure));
    } finally {
      freeSpace();
    }
  });

  it('answers 503 service_unavailable with Retry-After, logs SQLITE_FULL, and writes again once there is room', async () => {
    const freeSpace = fillDisk(env);
    let refused: Awaited<ReturnType<TestEnv['request']>> | null = null;
    try {
      for (let n = 0; n < MAX_TRIES && !refused; n++) {
        const res = await env.request('POST', '/api/v1/offers', { body: offerBody(n) });
        if (res.status !== 201) refused = res;
      }
    } finally {
      freeSpace();
    }
    assert.ok(refused, `no request was refused within ${MAX_TRIES} tries`);
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'service_unavailable');
    assert.equal(refused.headers['retry-after'], '1');
    const log = env.logs.join('');
    assert.match(log, /SQLITE_FULL/);
    assert.match(log, /database or disk is full/);
    assert.doesNotMatch(log, /cannot rollback|no such savepoint/);

    const res = await env.request('POST', '/api/v1/offers', { body: offerBody(MAX_TRIES) });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
});
