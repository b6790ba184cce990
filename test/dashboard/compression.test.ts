import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { createTestEnv, type TestEnv } from '../helpers.js';
import { signedInClient } from './client.js';

// Compression does not touch the database: one dialect is enough.
describe('compressed dashboard responses', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite');
  });
  after(() => env.close());

  it('compresses pages, CSS and JS for clients that accept it', async () => {
    const client = await signedInClient(env);
    const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const page = await env.app.inject({ url: '/dashboard', headers: { cookie, 'accept-encoding': 'gzip' } });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['content-encoding'], 'gzip');
    assert.match(gunzipSync(page.rawPayload).toString('utf8'), /<h1>Overview<\/h1>/);
    const plainPage = await env.app.inject({ url: '/dashboard/login' });
    const css = /href="(\/dashboard\/assets\/app\.[0-9a-f]+\.css)"/.exec(plainPage.body)?.[1] ?? '';
    const asset = await env.app.inject({ url: css || '/missing', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(asset.headers['content-encoding'], 'gzip');
  });

  it('leaves API responses uncompressed (the hot paths do not pay for it)', async () => {
    const res = await env.request('GET', '/api/v1/offers', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], undefined);
  });
});
