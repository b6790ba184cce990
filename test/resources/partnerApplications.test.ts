import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const APPLY = '/api/public/partners/apply';
const APPLY_LIMIT = 3;
const URLENCODED = 'application/x-www-form-urlencoded';
/** What Chromium sends with a form post. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

for (const dialect of testedDialects()) {
  describe(`public partner applications (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { APPLY_RATE_LIMIT_PER_MINUTE: String(APPLY_LIMIT) } });
    });
    after(() => env.close());
    // The limit is per client IP and every inject comes from 127.0.0.1: start each test
    // in a fresh window so tests do not use up each other's allowance.
    beforeEach(() => env.clock.advance(61_000));

    const applyAs = (body: Record<string, unknown>) => env.request('POST', APPLY, { key: null, body });
    const appliedEvents = async () => {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', 'partner.applied')
        .orderBy('id')
        .execute();
      return rows.map((r) => JSON.parse(r.payload));
    };
    const form = (slug: string, fields: Record<string, string>, remoteAddress?: string) =>
      env.app.inject({
        method: 'POST',
        url: `/apply/${slug}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
        ...(remoteAddress ? { remoteAddress } : {}),
      });

    const post = (type: string, payload: string, accept: string, remoteAddress?: string) =>
      env.app.inject({
        method: 'POST',
        url: `/apply/${env.brand.slug}`,
        headers: { 'content-type': type, accept },
        payload,
        ...(remoteAddress ? { remoteAddress } : {}),
      });

    describe('POST /api/public/partners/apply', () => {
      it('creates an applicant without an API key and answers 201 with id and status', async () => {
        const res = await applyAs({
          brandSlug: env.brand.slug,
          name: 'Bob Blogs',
          email: 'bob@blogs.example',
          website: 'https://bob.example',
        });
        assert.equal(res.status, 201);
        assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
        assert.match(res.body.id, /^prt_[0-9A-Z]{26}$/);
        assert.equal(res.body.status, 'applicant');
        const stored = await env.request('GET', `/api/v1/partners/${res.body.id}`);
        assert.equal(stored.body.status, 'applicant');
        assert.equal(stored.body.approvedAt, null);
      });

      it('fires partner.applied with the envelope and every data field', async () => {
        const res = await applyAs({ brandSlug: env.brand.slug, name: 'Carol', email: 'carol@example.com' });
        const events = (await appliedEvents()).filter((e) => e.data.partnerId === res.body.id);
        assert.equal(events.length, 1);
        const event = events[0];
        assert.deepEqual(Object.keys(event), ['id', 'event', 'createdAt', 'brandId', 'data']);
        assert.match(event.id, /^evt_[0-9A-Z]{26}$/);
        assert.equal(event.event, 'partner.applied');
        assert.match(event.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.equal(event.createdAt, new Date(env.clock.now()).toISOString());
        assert.equal(event.brandId, env.brand.id);
        assert.deepEqual(event.data, {
          partnerId: res.body.id,
          metadata: {},
          name: 'Carol',
          email: 'carol@example.com',
          website: null,
          status: 'applicant',
        });
      });

      it('answers 422 for an unknown brandSlug and creates nothing', async () => {
        const before = (await appliedEvents()).length;
        const res = await applyAs({ brandSlug: 'no-such-brand', name: 'Dan', email: 'dan@example.com' });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['brandSlug'],
        );
        assert.equal((await appliedEvents()).length, before);
      });

      it('answers 422 for a bad email', async () => {
        const res = await applyAs({ brandSlug: env.brand.slug, name: 'Eve', email: 'eve-at-example' });
        const error = expectError(res, 422, 'validation_error');
        assert.deepEqual(
          error.details?.map((d) => d.path),
          ['email'],
        );
      });

      it('answers 429 with Retry-After once the per-IP limit is used up', async () => {
        const body = { brandSlug: env.brand.slug, name: 'Eager', email: 'eager@example.com' };
        for (let i = 0; i < APPLY_LIMIT; i++) assert.equal((await applyAs(body)).status, 201, `request ${i + 1}`);
        env.clock.advance(15_000);
        const blocked = await applyAs(body);
        expectError(blocked, 429, 'rate_limit_exceeded');
        assert.equal(blocked.headers['retry-after'], '45');
        const eager = (await appliedEvents()).filter((e) => e.data.name === 'Eager');
        assert.equal(eager.length, APPLY_LIMIT, 'the refused application is not recorded');
      });

      it('counts the limit for each client IP separately', async () => {
        const body = { brandSlug: env.brand.slug, name: 'Shared', email: 'shared@example.com' };
        for (let i = 0; i < APPLY_LIMIT; i++) await applyAs(body);
        expectError(await applyAs(body), 429, 'rate_limit_exceeded');
        const other = await env.app.inject({
          method: 'POST',
          url: APPLY,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(body),
          remoteAddress: '203.0.113.9',
        });
        assert.equal(other.statusCode, 201);
      });

      it('counts every address of one IPv6 /64 as one client', async () => {
        const body = { brandSlug: env.brand.slug, name: 'Roaming', email: 'roaming@example.com' };
        const from = (remoteAddress: string) =>
          env.app.inject({
            method: 'POST',
            url: APPLY,
            headers: { 'content-type': 'application/json' },
            payload: JSON.stringify(body),
            remoteAddress,
          });
        const statuses: number[] = [];
        for (let i = 0; i <= APPLY_LIMIT; i++) statuses.push((await from(`2001:db8:9:9::${i + 1}`)).statusCode);
        assert.deepEqual(statuses, [...Array(APPLY_LIMIT).fill(201), 429]);
        assert.equal((await from('2001:db8:9:a::1')).statusCode, 201, 'the next /64 is another client');
      });
    });

    describe('GET /apply/:brandSlug', () => {
      it('returns an HTML form with labelled name, email and website fields', async () => {
        const res = await env.app.inject({ method: 'GET', url: `/apply/${env.brand.slug}` });
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.match(res.body, /<form [^>]*method="post"[^>]*action="\/apply\//);
        for (const field of ['name', 'email', 'website']) {
          assert.match(res.body, new RegExp(`<label for="${field}">`), `label for ${field}`);
          assert.match(res.body, new RegExp(`<input id="${field}" name="${field}"`), `input ${field}`);
        }
        // Its own icon, so the browser does not ask for /favicon.ico (a 404 in its console).
        const icon = /<link rel="icon" href="([^"]+)"/.exec(res.body)?.[1];
        assert.ok(icon, 'the page names an icon');
        assert.equal((await env.app.inject({ method: 'GET', url: icon })).statusCode, 200);
      });

      it('answers a 404 page for an unknown slug', async () => {
        const res = await env.app.inject({ method: 'GET', url: '/apply/no-such-brand' });
        assert.equal(res.statusCode, 404);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.match(res.body, /Not found/);
        assert.doesNotMatch(res.body, /<form/);
      });

      it("answers an address the router cannot decode with a 400 page, not the API's JSON", async () => {
        for (const [method, url] of [
          ['GET', '/apply/%zz'],
          ['GET', '/apply/brand-%ff'],
          ['POST', '/apply/%zz'],
        ] as const) {
          const res = await env.app.inject({ method, url });
          const where = `${method} ${url}`;
          assert.equal(res.statusCode, 400, where);
          assert.match(String(res.headers['content-type']), /^text\/html/, where);
          assert.match(res.body, /<h1>Bad request<\/h1>/, where);
          assert.match(res.body, /not validly encoded/, where);
          assert.match(String(res.headers['content-security-policy']), /default-src/, where);
          assert.ok(res.headers['x-request-id'], where);
        }
        // A slug over the router's length limit matches no page: a 404 page.
        const overlong = await env.app.inject({ method: 'GET', url: `/apply/${'x'.repeat(1001)}` });
        assert.equal(overlong.statusCode, 404);
        assert.match(overlong.body, /<h1>Not found<\/h1>/);
        // The JSON endpoint beside it keeps the API's error shape.
        const api = await env.app.inject({ method: 'POST', url: '/api/public/partners/%zz' });
        assert.equal(api.statusCode, 400);
        assert.equal(api.json().error.code, 'bad_request');
      });
    });

    describe('POST /apply/:brandSlug (form post)', () => {
      it('shows the confirmation and creates an applicant', async () => {
        const res = await form(env.brand.slug, {
          name: 'Fiona Forms',
          email: 'fiona@example.com',
          website: 'https://fiona.example',
        });
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.match(res.body, /Thank you/);
        const list = await env.request('GET', '/api/v1/partners?status=applicant');
        const fiona = list.body.data.find((p: { name: string }) => p.name === 'Fiona Forms');
        assert.ok(fiona, 'the applicant is listed');
        assert.equal(fiona.email, 'fiona@example.com');
        assert.equal(fiona.website, 'https://fiona.example');
        const events = (await appliedEvents()).filter((e) => e.data.partnerId === fiona.id);
        assert.equal(events.length, 1);
      });

      it('shows the form again with the problem for a bad email, creating nothing', async () => {
        const before = (await appliedEvents()).length;
        const res = await form(env.brand.slug, { name: 'Gus', email: 'nope' });
        assert.equal(res.statusCode, 422);
        assert.match(res.body, /role="alert"/);
        assert.match(res.body, /email/);
        assert.match(res.body, /value="Gus"/);
        assert.equal((await appliedEvents()).length, before);
      });

      it('lists every problem at once, each beside its field by its label, with the focus on the summary', async () => {
        const before = (await appliedEvents()).length;
        const res = await form(env.brand.slug, { name: '', email: 'not-an-email', website: 'notaurl' });
        assert.equal(res.statusCode, 422);
        const body = res.body;
        assert.match(body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
        assert.doesNotMatch(body, /Validation failed/);
        for (const [field, label, problem] of [
          ['name', 'Name or company', 'is required'],
          ['email', 'Email', 'must be an email address'],
          ['website', 'Website \\(optional\\)', 'must be an absolute http\\(s\\) URL'],
        ] as const) {
          assert.match(body, new RegExp(`<a href="#${field}">${label}</a>: ${problem}`), `${field} in the summary`);
          const input = new RegExp(`<input id="${field}"[^>]*>`).exec(body)?.[0] ?? '';
          assert.match(input, /aria-invalid="true"/, input);
          assert.match(input, new RegExp(`aria-describedby="${field}-error"`), input);
          assert.match(body, new RegExp(`<p class="field-error" id="${field}-error">${problem}`), `${field} beside it`);
        }
        assert.match(body, /value="not-an-email"/);
        assert.match(body, /value="notaurl"/);
        assert.equal((await appliedEvents()).length, before);
        // A field longer than the form takes is named by its label too.
        const long = await form(env.brand.slug, { name: 'n'.repeat(201), email: 'x' });
        assert.equal(long.statusCode, 422);
        assert.match(long.body, /<a href="#name">Name or company<\/a>: must NOT have more than 200 characters/);
      });

      it('answers a 404 page for an unknown slug', async () => {
        const res = await form('no-such-brand', { name: 'Hal', email: 'hal@example.com' });
        assert.equal(res.statusCode, 404);
        assert.match(res.body, /Not found/);
      });

      it("answers a browser over the rate limit with a page in the form's style and Retry-After, a JSON-only client with JSON", async () => {
        const body = { brandSlug: env.brand.slug, name: 'Kay', email: 'kay@example.com' };
        for (let i = 0; i < APPLY_LIMIT; i++) assert.equal((await applyAs(body)).status, 201);
        const fields = new URLSearchParams({ name: 'Kay late', email: 'kay@example.com' }).toString();
        const page = await post(URLENCODED, fields, BROWSER_ACCEPT);
        assert.equal(page.statusCode, 429);
        assert.match(String(page.headers['content-type']), /^text\/html/);
        assert.match(String(page.headers['retry-after']), /^\d+$/);
        assert.match(page.body, /<h1>Too many applications<\/h1>/);
        assert.match(page.body, new RegExp(`Please wait ${page.headers['retry-after']} seconds`));
        assert.match(page.body, new RegExp(`<a href="/apply/${env.brand.slug}">Back to the form</a>`));
        assert.match(String(page.headers['content-security-policy']), /default-src/);
        assert.doesNotMatch(page.body, /rate_limit_exceeded/);
        const json = await post(URLENCODED, fields, 'application/json');
        assert.equal(json.statusCode, 429);
        assert.match(String(json.headers['retry-after']), /^\d+$/);
        assert.equal(json.json().error.code, 'rate_limit_exceeded');
      });

      it('answers a browser a post that is no form post (415) or too large (413) with a page, a JSON-only client with JSON', async () => {
        const multipart = `--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nA\r\n--x--\r\n`;
        const tooLarge = new URLSearchParams({ name: 'L', email: 'l@example.com', website: 'x'.repeat(1_100_000) });
        for (const [status, type, payload, title, code] of [
          [415, 'multipart/form-data; boundary=x', multipart, 'Not sent from the form', 'unsupported_media_type'],
          [413, URLENCODED, tooLarge.toString(), 'Too much to send', 'payload_too_large'],
        ] as const) {
          // Each from its own address: the refused posts count against the per-IP limit too.
          const page = await post(type, payload, BROWSER_ACCEPT, `192.0.2.${status - 400}`);
          assert.equal(page.statusCode, status);
          assert.match(String(page.headers['content-type']), /^text\/html/, `${status}`);
          assert.match(page.body, new RegExp(`<h1>${title}</h1>`));
          assert.doesNotMatch(page.body, /application\/json/, 'a person is not told to send JSON');
          assert.match(String(page.headers['content-security-policy']), /default-src/);
          const json = await post(type, payload, 'application/json', `192.0.2.${status - 300}`);
          assert.equal(json.statusCode, status);
          assert.equal(json.json().error.code, code);
        }
        const listed = await env.request('GET', '/api/v1/partners?status=applicant');
        assert.equal(
          listed.body.data.filter((p: { email: string }) => p.email === 'l@example.com').length,
          0,
          'nothing was recorded',
        );
      });

      it('counts form posts against the same per-IP limit as the JSON endpoint', async () => {
        const body = { brandSlug: env.brand.slug, name: 'Ivy', email: 'ivy@example.com' };
        for (let i = 0; i < APPLY_LIMIT; i++) assert.equal((await applyAs(body)).status, 201);
        const blocked = await form(env.brand.slug, { name: 'Ivy late', email: 'ivy@example.com' });
        assert.equal(blocked.statusCode, 429);
        assert.match(String(blocked.headers['retry-after']), /^\d+$/);
      });
    });
  });
}
