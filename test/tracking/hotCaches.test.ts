/**
 * The hot paths keep API keys, offers, partners, brands and blocklists in memory
 * (src/db/cache.ts). A change must still apply: at once when this process made it, at the
 * next request on SQLite when another process did (PRAGMA data_version), and within
 * MAX_AGE_MS (half a second) when another PostgreSQL process did.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cachedLookup, MAX_AGE_MS } from '../../src/db/cache.js';
import type { Dialect } from '../../src/db/database.js';
import { newId } from '../../src/ids.js';
import { insertApiKey, revokeApiKey } from '../../src/modules/apiKeys/service.js';
import type { Click } from '../../src/modules/clicks/schemas.js';
import { findOfferOfAnyBrand } from '../../src/modules/offers/repository.js';
import {
  anotherHandle,
  createTestDatabase,
  createTestEnv,
  type TestDatabase,
  type TestEnv,
  testedDialects,
} from '../helpers.js';

const BROWSER_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const HOME_IP = '81.2.69.142';
const NO_LIMIT = { RATE_LIMIT_PER_MINUTE: '100000' };

async function newOffer(env: TestEnv): Promise<string> {
  const res = await env.request('POST', '/api/v1/offers', {
    body: { name: 'Offer', destinationUrl: 'https://shop.example/land?cid={click_id}' },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function newPartner(env: TestEnv): Promise<string> {
  const res = await env.request('POST', '/api/v1/partners', { body: { name: 'Partner', email: 'p@example.com' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function newKey(env: TestEnv): Promise<{ id: string; secret: string }> {
  const { key, secret } = await env.ctx.db.transact((trx) =>
    insertApiKey(trx, env.clock, { brandId: env.brand.id, name: 'second' }),
  );
  return { id: key.id, secret };
}

function visit(env: TestEnv, offerId: string, partnerId: string) {
  return env.app.inject({
    method: 'GET',
    url: `/t/${offerId}/${partnerId}`,
    headers: { 'user-agent': BROWSER_UA },
    remoteAddress: HOME_IP,
  });
}

async function lastClick(env: TestEnv, offerId: string): Promise<Click> {
  const res = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=1`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [click] = res.body.data as Click[];
  assert.ok(click, 'a click was recorded');
  return click;
}

for (const dialect of testedDialects()) {
  describe(`cached rows of the hot paths (${dialect})`, () => {
    describe('after a change made by this process', () => {
      let env: TestEnv;
      before(async () => {
        env = await createTestEnv(dialect, { env: NO_LIMIT });
      });
      after(() => env.close());

      it('reads a row once for lookups that miss together, and anew after a change', async () => {
        const offerId = await newOffer(env);
        let reads = 0;
        const lookup = cachedLookup((db, id: string) => {
          reads += 1;
          return findOfferOfAnyBrand(db.read, id);
        });
        const together = await Promise.all(Array.from({ length: 10 }, () => lookup.get(env.ctx, offerId)));
        assert.equal(reads, 1);
        assert.deepEqual(
          together.map((offer) => offer?.id),
          together.map(() => offerId),
        );
        const renamed = await env.request('PATCH', `/api/v1/offers/${offerId}`, { body: { name: 'Renamed' } });
        assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
        const after = await Promise.all([lookup.get(env.ctx, offerId), lookup.get(env.ctx, offerId)]);
        assert.equal(reads, 2, 'the change outdated the entry: one new read for both');
        assert.deepEqual(
          after.map((offer) => offer?.name),
          ['Renamed', 'Renamed'],
        );
      });

      it('refuses a revoked key on its next request', async () => {
        const key = await newKey(env);
        assert.equal((await env.request('GET', '/api/v1/offers', { key: key.secret })).status, 200);
        await revokeApiKey(env.ctx.db, env.clock, key.id);
        assert.equal((await env.request('GET', '/api/v1/offers', { key: key.secret })).status, 401);
      });

      it('stops redirecting a paused offer at once', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        const paused = await env.request('PATCH', `/api/v1/offers/${offerId}`, { body: { status: 'paused' } });
        assert.equal(paused.status, 200, JSON.stringify(paused.body));
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 404);
      });

      it('stops redirecting for a banned partner at once', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        const banned = await env.request('POST', `/api/v1/partners/${partnerId}/ban`, { body: {} });
        assert.equal(banned.status, 200, JSON.stringify(banned.body));
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 404);
      });

      it('scores the next click against a new blocklist entry', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        assert.ok(!(await lastClick(env, offerId)).fraudSignals.includes('blocklist_hit'));
        const added = await env.request('POST', '/api/v1/fraud/blocklist', { body: { type: 'ip', value: HOME_IP } });
        assert.equal(added.status, 201, JSON.stringify(added.body));
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        assert.ok((await lastClick(env, offerId)).fraudSignals.includes('blocklist_hit'));
      });

      it('lists a new offer in GET /offers at once', async () => {
        const before = await env.request('GET', '/api/v1/offers?limit=100');
        const offerId = await newOffer(env);
        const afterCreate = await env.request('GET', '/api/v1/offers?limit=100');
        assert.equal(afterCreate.body.data.length, before.body.data.length + 1);
        assert.equal(afterCreate.body.data[0].id, offerId);
      });
    });

    describe('after a change made by another process', () => {
      let database: TestDatabase;
      let other: TestDatabase;
      let env: TestEnv;
      before(async () => {
        database = await createTestDatabase(dialect);
        env = await createTestEnv(dialect, { database, env: NO_LIMIT });
        other = anotherHandle(database);
      });
      after(async () => {
        await env.close();
        await other.drop();
        await database.db.close();
        await database.drop();
      });

      /**
       * What the next request may wait for after another process's change: nothing on
       * SQLite (the writer's data_version has moved), MAX_AGE_MS on PostgreSQL.
       */
      const untilApplied = (d: Dialect) => {
        if (d === 'postgres') env.clock.advance(MAX_AGE_MS);
      };

      it(`refuses a key revoked elsewhere ${dialect === 'sqlite' ? 'on its next request' : 'within MAX_AGE_MS'}`, async () => {
        const key = await newKey(env);
        assert.equal((await env.request('GET', '/api/v1/offers', { key: key.secret })).status, 200);
        await revokeApiKey(other.db, env.clock, key.id);
        untilApplied(dialect);
        assert.equal((await env.request('GET', '/api/v1/offers', { key: key.secret })).status, 401);
      });

      it('stops redirecting an offer paused elsewhere', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        await other.db.transact((trx) =>
          trx.updateTable('offers').set({ status: 'paused' }).where('id', '=', offerId).execute(),
        );
        untilApplied(dialect);
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 404);
      });

      it('stops redirecting for a partner banned elsewhere', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        await other.db.transact((trx) =>
          trx.updateTable('partners').set({ status: 'banned' }).where('id', '=', partnerId).execute(),
        );
        untilApplied(dialect);
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 404);
      });

      it('scores the next click against a blocklist entry added elsewhere', async () => {
        const [offerId, partnerId] = [await newOffer(env), await newPartner(env)];
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        assert.ok(!(await lastClick(env, offerId)).fraudSignals.includes('blocklist_hit'));
        const now = env.clock.now();
        await other.db.transact((trx) =>
          trx
            .insertInto('fraud_blocklist')
            .values({ id: newId('blk', now), brand_id: env.brand.id, type: 'ip', value: HOME_IP, created_at: now })
            .execute(),
        );
        untilApplied(dialect);
        assert.equal((await visit(env, offerId, partnerId)).statusCode, 302);
        assert.ok((await lastClick(env, offerId)).fraudSignals.includes('blocklist_hit'));
      });
    });
  });
}
