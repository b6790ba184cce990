import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CONTENT_SECURITY_POLICY } from '../../src/web/securityHeaders.js';
import { createTestEnv, type TestEnv } from '../helpers.js';

type Headers = Record<string, string | string[] | number | undefined>;

/** `default-src 'self';script-src 'self'` → { 'default-src': ["'self'"], … } */
function parseCsp(header: unknown): Record<string, string[]> {
  assert.equal(typeof header, 'string', 'a Content-Security-Policy header');
  return Object.fromEntries(
    String(header)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...values]) => [name, values]),
  );
}

/** The headers every HTML page of ours carries (dashboard, docs, partner form). */
function assertPageHeaders(headers: Headers, where: string): void {
  assert.deepEqual(parseCsp(headers['content-security-policy']), CONTENT_SECURITY_POLICY, where);
  assert.equal(headers['x-frame-options'], 'DENY', where);
  assert.equal(headers['x-content-type-options'], 'nosniff', where);
  assert.equal(headers['referrer-policy'], 'same-origin', where);
  assert.equal(headers['cross-origin-opener-policy'], 'same-origin', where);
  assert.equal(headers['cross-origin-resource-policy'], 'same-origin', where);
}

// Headers do not depend on the database: one dialect is enough.
describe('security headers', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv('sqlite');
  });
  after(() => env.close());

  it('puts one policy on the dashboard: no inline script or style, no framing, fetches to itself only', async () => {
    assert.equal(CONTENT_SECURITY_POLICY['script-src'].join(' '), "'self'");
    assert.equal(CONTENT_SECURITY_POLICY['style-src'].join(' '), "'self'");
    assert.equal(CONTENT_SECURITY_POLICY['connect-src'].join(' '), "'self'");
    assert.equal(CONTENT_SECURITY_POLICY['frame-ancestors'].join(' '), "'none'");
    // The last one is refused by the router itself, before the dashboard's hooks run.
    for (const url of ['/dashboard/login', '/dashboard/no-such-page', '/dashboard', '/dashboard/offers/%zz']) {
      const res = await env.app.inject({ url });
      assertPageHeaders(res.headers, url);
      assert.equal(res.headers['cache-control'], 'no-store', url);
    }
  });

  it('puts the same policy on the partner portal, signed in or not', async () => {
    for (const url of ['/portal/login', '/portal/invite?token=x', '/portal/no-such-page', '/portal']) {
      const res = await env.app.inject({ url });
      assertPageHeaders(res.headers, url);
      assert.equal(res.headers['cache-control'], 'no-store', url);
    }
  });

  it('serves /docs under the same policy, replacing swagger-ui’s own', async () => {
    for (const url of ['/docs/', '/docs/static/swagger-initializer.js', '/docs/json']) {
      const res = await env.app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assertPageHeaders(res.headers, url);
    }
  });

  it('serves the partner application form and its answers under the same policy', async () => {
    const form = await env.app.inject({ url: `/apply/${env.brand.slug}` });
    assertPageHeaders(form.headers, 'GET /apply');
    const posted = await env.app.inject({
      method: 'POST',
      url: `/apply/${env.brand.slug}`,
      payload: 'name=Nina&email=nina%40example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(posted.statusCode, 200);
    assertPageHeaders(posted.headers, 'POST /apply');
    assert.doesNotMatch(form.body, /<style|style="|<script/, 'nothing inline for the policy to refuse');
  });

  it('leaves the JSON API, the tracking link and the pixel without page headers', async () => {
    // A Referrer-Policy on the tracking link's 302 would hide the partner's site from the
    // advertiser; a Cross-Origin-Resource-Policy would break the pixel in another site's <img>.
    const offer = await env.request('POST', '/api/v1/offers', {
      body: { name: 'Headers', destinationUrl: 'https://shop.example/' },
    });
    const partner = await env.request('POST', '/api/v1/partners', {
      body: { name: 'Headers partner', email: 'headers@example.com' },
    });
    const api = await env.request('GET', '/api/v1/brand');
    const click = await env.app.inject({ url: `/t/${offer.body.id}/${partner.body.id}` });
    const pixel = await env.app.inject({ url: '/postback?token=nope&click_id=clk_x' });
    assert.equal(api.status, 200);
    assert.equal(click.statusCode, 302);
    assert.equal(pixel.statusCode, 401);
    for (const [name, headers] of [
      ['API', api.headers],
      ['tracking link', click.headers],
      ['pixel', pixel.headers],
    ] as const) {
      for (const header of ['content-security-policy', 'referrer-policy', 'cross-origin-resource-policy']) {
        assert.equal(headers[header], undefined, `${name}: ${header}`);
      }
    }
  });
});
