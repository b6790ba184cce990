import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv } from '../helpers.js';

const ONE_YEAR_IMMUTABLE = 'public, max-age=31536000, immutable';

/** The asset URLs a page links to (scripts, stylesheets, icons). */
function assetUrls(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="((?:\/dashboard)?\/assets\/[^"]+)"/g)].map((m) => m[1]!);
}

function sha256(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

// Static files do not touch the database: one dialect is enough.
describe('static assets', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite');
  });
  after(() => env.close());

  it('links the dashboard files by content hash and serves them for a year, immutable', async () => {
    const page = await env.app.inject({ url: '/dashboard/login' });
    const urls = assetUrls(page.body);
    assert.deepEqual(
      urls.map((u) => u.replace(/\.[0-9a-f]{12}\./, '.HASH.')),
      ['/dashboard/assets/icon.HASH.svg', '/dashboard/assets/app.HASH.css', '/dashboard/assets/app.HASH.js'],
    );
    const types = { css: /^text\/css/, js: /^(text|application)\/javascript/, svg: /^image\/svg\+xml/ };
    for (const url of urls) {
      const [, name, hash, ext] = /\/([a-z]+)\.([0-9a-f]{12})\.([a-z]+)$/.exec(url) ?? [];
      const file = readFileSync(new URL(`../../src/modules/dashboard/assets/${name}.${ext}`, import.meta.url));
      assert.equal(sha256(file).slice(0, 12), hash, `${url} names its content`);
      const res = await env.app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['cache-control'], ONE_YEAR_IMMUTABLE, url);
      assert.match(String(res.headers['content-type']), types[ext as keyof typeof types], url);
      assert.deepEqual(res.rawPayload, file, url);
    }
  });

  it('answers 404 for an unknown name, a stale hash and the bare file name', async () => {
    const page = await env.app.inject({ url: '/dashboard/login' });
    const css = assetUrls(page.body).find((u) => u.endsWith('.css'))!;
    for (const url of [
      '/dashboard/assets/nope.0123456789ab.css',
      css.replace(/\.[0-9a-f]{12}\./, '.0123456789ab.'),
      '/dashboard/assets/app.css',
      '/assets/app.css',
    ]) {
      const res = await env.app.inject({ url });
      assert.equal(res.statusCode, 404, url);
      assert.notEqual(res.headers['cache-control'], ONE_YEAR_IMMUTABLE, url);
    }
  });

  it('serves the public pages’ stylesheet the same way', async () => {
    const page = await env.app.inject({ url: `/apply/${env.brand.slug}` });
    const [url] = assetUrls(page.body).filter((u) => u.endsWith('.css'));
    assert.match(url ?? '', /^\/assets\/public\.[0-9a-f]{12}\.css$/);
    const res = await env.app.inject({ url: url! });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['cache-control'], ONE_YEAR_IMMUTABLE);
    assert.match(String(res.headers['content-type']), /^text\/css/);
    const file = readFileSync(new URL('../../src/web/assets/public.css', import.meta.url));
    assert.deepEqual(res.rawPayload, file);
    // The tracking link's "not active" page uses it too.
    const dead = await env.app.inject({ url: '/t/off_nope/prt_nope' });
    assert.equal(dead.statusCode, 404);
    assert.deepEqual(assetUrls(dead.body), assetUrls(page.body));
  });
});
