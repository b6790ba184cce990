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
import { brandRow, createTestEnv, type TestEnv } from '../helpers.js';

/** Comfortably more offers than a few free pages of the file can hold. */
const MAX_TRIES = 500;
/** Clicks are small rows, written in group-commit batches: more of them to fill the free pages. */
const MAX_CLICK_TRIES = 5000;

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
              .values(brandRow(`full${n}`, 'x'.repeat(2000)))
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

  it('answers a tracking link whose click cannot be stored with a 503 page and Retry-After, never a redirect', async () => {
    const offer = await env.request('POST', '/api/v1/offers', { body: offerBody(0) });
    const partner = await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } });
    const link = `/t/${offer.body.id}/${partner.body.id}?sub1=${'s'.repeat(255)}`;
    const follow = (accept = 'text/html,*/*;q=0.8') =>
      env.app.inject({
        method: 'GET',
        url: link,
        headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)', accept },
      });
    const freeSpace = fillDisk(env);
    let refused: Awaited<ReturnType<typeof follow>> | null = null;
    let refusedJson: Awaited<ReturnType<typeof follow>> | null = null;
    try {
      for (let n = 0; n < MAX_CLICK_TRIES && !refused; n++) {
        const res = await follow();
        if (res.statusCode !== 302) refused = res;
      }
      // A client asking for JSON alone gets the API's error shape.
      if (refused) refusedJson = await follow('application/json');
    } finally {
      freeSpace();
    }
    assert.ok(refused, `no click was refused within ${MAX_CLICK_TRIES} tries`);
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.headers.location, undefined);
    assert.match(String(refused.headers['content-type']), /^text\/html/);
    assert.match(refused.body, /<h1>This link is temporarily unavailable<\/h1>/);
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers['cache-control'], 'no-store');
    assert.match(env.logs.join(''), /storage unavailable/);
    assert.equal(refusedJson?.statusCode, 503);
    assert.equal(refusedJson?.json().error.code, 'service_unavailable');

    assert.equal((await follow()).statusCode, 302);
  });
});
