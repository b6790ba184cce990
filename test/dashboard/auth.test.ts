import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { LOGIN_ATTEMPTS_PER_MINUTE } from '../../src/modules/dashboard/pages/login.js';
import { MAX_PASSWORD_LENGTH } from '../../src/modules/users/passwords.js';
import { createUser } from '../../src/modules/users/service.js';
import { hashSessionToken, SESSION_TTL_MS } from '../../src/modules/users/sessions.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { createDashboardUser, DashboardClient, PASSWORD, parseSetCookie, signedInClient } from './client.js';

/** A new rate-limit window, so each test may sign in as often as it needs. */
const NEXT_WINDOW_MS = 61_000;

function sessionCookie(setCookies: string[]): string {
  const cookie = setCookies.find((c) => c.startsWith('affitrack_session='));
  assert.ok(cookie, `no session cookie in ${JSON.stringify(setCookies)}`);
  return cookie;
}

for (const dialect of testedDialects()) {
  describe(`dashboard sign-in and sessions (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());
    beforeEach(() => env.clock.advance(NEXT_WINDOW_MS));

    it('redirects a visitor without a session to the sign-in page (303)', async () => {
      const res = await env.app.inject({ method: 'GET', url: '/dashboard/offers?status=paused' });
      assert.equal(res.statusCode, 303);
      assert.equal(
        res.headers.location,
        `/dashboard/login?next=${encodeURIComponent('/dashboard/offers?status=paused')}`,
      );
      const post = await env.app.inject({
        method: 'POST',
        url: '/dashboard/offers',
        payload: 'name=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(post.statusCode, 303);
      assert.equal(post.headers.location, '/dashboard/login');
    });

    it('serves the sign-in page with a strict CSP and a form token cookie', async () => {
      const res = await env.app.inject({ method: 'GET', url: '/dashboard/login' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(
        String(res.headers['content-security-policy']),
        /default-src 'self'; ?script-src 'self'; ?style-src 'self'/,
      );
      assert.equal(res.headers['x-frame-options'], 'DENY');
      assert.match(res.body, /<label for="email">Email<\/label>/);
      // The CSRF secret the form's token is made from: a browser-session cookie. SameSite=Lax
      // keeps it off cross-site posts without dropping it on a link from another site.
      const cookie = parseSetCookie(String(res.headers['set-cookie']));
      assert.equal(cookie.name, 'affitrack_csrf');
      assert.match(cookie.value, /^[\w-]{24}$/);
      assert.deepEqual(cookie.attributes, { Path: '/dashboard', HttpOnly: true, SameSite: 'Lax' });
    });

    it('refuses a wrong password without revealing which part was wrong', async () => {
      const email = await createDashboardUser(env);
      const client = new DashboardClient(env);
      const wrongPassword = await client.signIn(email, 'not the password');
      const unknownUser = await client.signIn('nobody@example.com', PASSWORD);
      for (const res of [wrongPassword, unknownUser]) {
        assert.equal(res.status, 422);
        assert.match(res.body, /The email or password is not correct\./);
        assert.equal(
          res.setCookies.some((c) => c.startsWith('affitrack_session=')),
          false,
        );
      }
      assert.match(wrongPassword.body, new RegExp(`value="${email}"`));
    });

    it('refuses a password longer than any that can be set, never checking a cut-off part of it', async () => {
      const longest = 'q'.repeat(MAX_PASSWORD_LENGTH);
      const email = `longest-${env.brand.id.slice(-6).toLowerCase()}@example.com`;
      await createUser(env.ctx, { brandId: env.brand.id, email, password: longest });
      await assert.rejects(
        createUser(env.ctx, { brandId: env.brand.id, email: 'longer@example.com', password: `${longest}q` }),
        /must be at most 1024 characters/,
      );
      const client = new DashboardClient(env);
      for (const wrong of [`${longest}q`, `${longest}-anything`]) {
        const res = await client.signIn(email, wrong);
        assert.equal(res.status, 422, `a password of ${wrong.length} characters`);
        assert.match(res.body, /The email or password is not correct\./);
      }
      assert.equal((await client.signIn(email, longest)).status, 303, 'the password itself still signs in');
    });

    it('signs in with a session cookie that is HttpOnly, SameSite=Lax, Path=/dashboard, 12 h', async () => {
      const email = await createDashboardUser(env);
      const client = new DashboardClient(env);
      const res = await client.signIn(` ${email.toUpperCase()} `);
      assert.equal(res.status, 303);
      assert.equal(res.location, '/dashboard');
      const cookie = parseSetCookie(sessionCookie(res.setCookies));
      assert.match(cookie.value, /^[\w-]{43}$/);
      assert.deepEqual(cookie.attributes, { 'Max-Age': '43200', Path: '/dashboard', HttpOnly: true, SameSite: 'Lax' });
      const token = cookie.value;
      const row = await env.ctx.db.read
        .selectFrom('dashboard_sessions')
        .selectAll()
        .where('id', '=', hashSessionToken(token))
        .executeTakeFirst();
      assert.ok(row, 'the session is stored under the hash of the cookie');
      assert.equal(row.expires_at - row.created_at, SESSION_TTL_MS);
      const user = await env.ctx.db.read
        .selectFrom('dashboard_users')
        .selectAll()
        .where('email', '=', email)
        .executeTakeFirstOrThrow();
      assert.equal(user.last_login_at, env.clock.now());
      assert.equal((await client.get('/dashboard')).status, 200);
    });

    it('follows ?next= inside the dashboard only', async () => {
      const email = await createDashboardUser(env);
      for (const [next, expected] of [
        ['/dashboard/conversions?status=pending', '/dashboard/conversions?status=pending'],
        ['https://evil.example/', '/dashboard'],
        ['//evil.example/dashboard', '/dashboard'],
        ['/dashboardx', '/dashboard'],
        ['/dashboard/../api/v1/brand', '/dashboard'],
        // Characters a Location header cannot carry: encoded, or refused when they are controls.
        ['/dashboard/日本?q=ü', '/dashboard/%E6%97%A5%E6%9C%AC?q=%C3%BC'],
        ['/dashboard/\u0001x', '/dashboard'],
      ]) {
        env.clock.advance(NEXT_WINDOW_MS);
        const client = new DashboardClient(env);
        await client.get('/dashboard/login');
        const res = await client.post('/dashboard/login', { email, password: PASSWORD, next: next! });
        assert.equal(res.location, expected, next);
      }
    });

    it('marks cookies Secure when the public URL is https', async () => {
      const secure = await createTestEnv(dialect, { env: { PUBLIC_URL: 'https://track.example.com' } });
      try {
        const email = await createDashboardUser(secure);
        const client = new DashboardClient(secure);
        const login = await secure.app.inject({ method: 'GET', url: '/dashboard/login' });
        assert.equal(parseSetCookie(String(login.headers['set-cookie'])).attributes.Secure, true);
        const res = await client.signIn(email);
        assert.equal(parseSetCookie(sessionCookie(res.setCookies)).attributes.Secure, true);
      } finally {
        await secure.close();
      }
    });

    it(`limits sign-in attempts to ${LOGIN_ATTEMPTS_PER_MINUTE} per minute per IP (429 page)`, async () => {
      const email = await createDashboardUser(env);
      const client = new DashboardClient(env);
      await client.get('/dashboard/login');
      for (let i = 0; i < LOGIN_ATTEMPTS_PER_MINUTE; i++) {
        assert.equal((await client.post('/dashboard/login', { email, password: 'guess' })).status, 422);
      }
      const blocked = await client.post('/dashboard/login', { email, password: PASSWORD });
      assert.equal(blocked.status, 429);
      assert.match(String(blocked.headers['retry-after']), /^\d+$/);
      assert.match(blocked.body, /Too many sign-in attempts/);
      assert.match(String(blocked.headers['content-type']), /^text\/html/);
      env.clock.advance(NEXT_WINDOW_MS);
      assert.equal((await client.post('/dashboard/login', { email, password: PASSWORD })).status, 303);
    });

    it('refuses a sign-in form without its token (login CSRF)', async () => {
      const email = await createDashboardUser(env);
      const client = new DashboardClient(env);
      await client.get('/dashboard/login');
      assert.equal((await client.post('/dashboard/login', { email, password: PASSWORD }, { csrf: null })).status, 403);
      assert.equal(
        (await client.post('/dashboard/login', { email, password: PASSWORD }, { csrf: 'x'.repeat(43) })).status,
        403,
      );
      const stranger = new DashboardClient(env);
      assert.equal(
        (await stranger.post('/dashboard/login', { email, password: PASSWORD }, { csrf: client.csrf })).status,
        403,
      );
    });

    it('ends a session after 12 hours and deletes it', async () => {
      const client = await signedInClient(env);
      env.clock.advance(SESSION_TTL_MS - 1000);
      assert.equal((await client.get('/dashboard/offers')).status, 200);
      env.clock.advance(2000);
      const res = await client.get('/dashboard/offers');
      assert.equal(res.status, 303);
      assert.equal(res.location, `/dashboard/login?expired=1&next=${encodeURIComponent('/dashboard/offers')}`);
      const login = await client.get(res.location!);
      assert.match(login.body, /Your session has expired/);
      const token = client.cookies.get('affitrack_session');
      assert.equal(token, undefined, 'the expired cookie is cleared');
    });

    it('signs out: the session row is deleted and the old cookie stops working', async () => {
      const client = await signedInClient(env);
      const token = client.cookies.get('affitrack_session')!;
      const res = await client.post('/dashboard/logout');
      assert.equal(res.status, 303);
      assert.equal(res.location, '/dashboard/login?signedout=1');
      const cleared = res.setCookies.map(parseSetCookie).find((c) => c.name === 'affitrack_session');
      assert.equal(cleared?.value, '');
      assert.equal(cleared?.attributes['Max-Age'], '0');
      assert.equal(cleared?.attributes.Path, '/dashboard');
      const row = await env.ctx.db.read
        .selectFrom('dashboard_sessions')
        .select('id')
        .where('id', '=', hashSessionToken(token))
        .executeTakeFirst();
      assert.equal(row, undefined);
      const replay = await env.app.inject({
        method: 'GET',
        url: '/dashboard',
        headers: { cookie: `affitrack_session=${token}` },
      });
      assert.equal(replay.statusCode, 303);
    });

    it("binds form tokens to their session: another session's token is refused in the same browser", async () => {
      const client = await signedInClient(env);
      const first = client.csrf;
      const created = await client.post('/dashboard/settings/api-keys', { name: 'first session' });
      assert.equal(created.status, 200);
      assert.match(created.body, /Authorization: Bearer &lt;key>/, 'the placeholder is text, not a tag');
      // The same browser (same CSRF cookie) signs out and in as someone else.
      await client.post('/dashboard/logout');
      await client.get('/dashboard/login');
      const signedOutToken = client.csrf;
      assert.equal((await client.signIn(await createDashboardUser(env))).status, 303);
      for (const [token, why] of [
        [first, 'a token of the previous session'],
        [signedOutToken, 'the sign-in page’s token'],
      ] as const) {
        const res = await client.post('/dashboard/settings/api-keys', { name: 'forged' }, { csrf: token });
        assert.equal(res.status, 403, why);
        assert.match(res.body, /This form could not be accepted/);
      }
      assert.equal((await client.post('/dashboard/settings/api-keys', { name: 'second session' })).status, 200);
      const names = (await env.ctx.db.read.selectFrom('api_keys').select('name').execute()).map((k) => k.name);
      assert.equal(names.includes('forged'), false);
    });

    it('sets the flash message cookie HttpOnly, SameSite=Lax, Path=/dashboard, for a minute', async () => {
      const client = await signedInClient(env);
      const res = await client.post('/dashboard/settings/blocklist', { type: 'ip', value: '198.51.100.7' });
      assert.equal(res.status, 303);
      const flash = res.setCookies.map(parseSetCookie).find((c) => c.name === 'affitrack_flash');
      assert.ok(flash, JSON.stringify(res.setCookies));
      assert.deepEqual(flash.attributes, { 'Max-Age': '60', Path: '/dashboard', HttpOnly: true, SameSite: 'Lax' });
      const page = await client.get(res.location!);
      assert.match(page.body, /198\.51\.100\.7 added to the blocklist\./);
      assert.equal(client.cookies.has('affitrack_flash'), false, 'read once, then cleared');
    });

    it('refuses every form post without the session CSRF token, or with a wrong one (403)', async () => {
      const client = await signedInClient(env);
      const fields = { name: 'Forged', destinationUrl: 'https://evil.example/' };
      for (const csrf of [null, '', 'wrong-token', `${client.csrf}x`]) {
        const res = await client.post('/dashboard/offers', fields, { csrf });
        assert.equal(res.status, 403, String(csrf));
        assert.match(res.body, /This form could not be accepted/);
      }
      const other = await signedInClient(env);
      assert.equal((await client.post('/dashboard/offers', fields, { csrf: other.csrf })).status, 403);
      assert.equal((await client.post('/dashboard/logout', {}, { csrf: null })).status, 403);
      const offers = await env.request('GET', '/api/v1/offers');
      assert.equal(
        offers.body.data.some((o: { name: string }) => o.name === 'Forged'),
        false,
      );
      // A JSON body is not a form: it carries no token either.
      const json = await env.app.inject({
        method: 'POST',
        url: '/dashboard/offers',
        payload: JSON.stringify({ _csrf: client.csrf, ...fields }),
        headers: {
          'content-type': 'application/json',
          cookie: `affitrack_session=${client.cookies.get('affitrack_session')}`,
        },
      });
      assert.equal(json.statusCode, 403);
    });
  });

  /** A dashboard user, and a browser on the sign-in page (its CSRF cookie and token). */
  async function signInPage(env: TestEnv) {
    const email = await createDashboardUser(env);
    const client = new DashboardClient(env);
    await client.get('/dashboard/login');
    return { email, client };
  }

  /** Signs in with a wrong password once from each of `origins`; the statuses in order. */
  async function attempts(client: DashboardClient, email: string, origins: DashboardClient['from'][]) {
    const statuses: number[] = [];
    for (const origin of origins) {
      client.from = origin;
      statuses.push((await client.post('/dashboard/login', { email, password: 'guess' })).status);
    }
    return statuses;
  }

  const PROXY = '10.0.0.5';
  const CLIENT = '203.0.113.50';
  const tries = (n: number) => Array.from({ length: n }, (_, i) => i);
  const underLimit = tries(LOGIN_ATTEMPTS_PER_MINUTE).map(() => 422);

  for (const setting of ['1', 'true']) {
    describe(`dashboard sign-in behind one proxy, TRUST_PROXY=${setting} (${dialect})`, () => {
      let env: TestEnv;
      before(async () => {
        env = await createTestEnv(dialect, { env: { TRUST_PROXY: setting } });
      });
      after(() => env.close());

      it('counts a client by the address the proxy appended, whatever it wrote to the left of it', async () => {
        const email = await createDashboardUser(env);
        const client = new DashboardClient(env);
        client.from = { remoteAddress: PROXY };
        await client.get('/dashboard/login');
        const forged = tries(LOGIN_ATTEMPTS_PER_MINUTE + 1).map((i) => ({
          remoteAddress: PROXY,
          headers: { 'x-forwarded-for': `198.51.100.${i}, ${CLIENT}` },
        }));
        assert.deepEqual(await attempts(client, email, forged), [...underLimit, 429]);
        // Another client behind the same proxy has its own count, even naming the first.
        const other = { remoteAddress: PROXY, headers: { 'x-forwarded-for': `${CLIENT}, 203.0.113.77` } };
        assert.deepEqual(await attempts(client, email, [other]), [422]);
      });
    });
  }

  describe(`dashboard sign-in behind listed proxies, TRUST_PROXY=10.0.0.0/8,127.0.0.1 (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: '10.0.0.0/8,127.0.0.1' } });
    });
    after(() => env.close());
    beforeEach(() => env.clock.advance(NEXT_WINDOW_MS));

    it('counts a client by the address the nearest unlisted hop has, through listed proxies', async () => {
      const { email, client } = await signInPage(env);
      const chained = tries(LOGIN_ATTEMPTS_PER_MINUTE + 1).map((i) => ({
        remoteAddress: PROXY,
        headers: { 'x-forwarded-for': `198.51.100.${i}, ${CLIENT}, 10.0.0.7` },
      }));
      assert.deepEqual(await attempts(client, email, chained), [...underLimit, 429]);
    });

    it('believes no X-Forwarded-For from a peer that is not a listed proxy', async () => {
      const { email, client } = await signInPage(env);
      const direct = tries(LOGIN_ATTEMPTS_PER_MINUTE + 1).map((i) => ({
        remoteAddress: '192.0.2.44',
        headers: { 'x-forwarded-for': `198.51.100.${i}` },
      }));
      assert.deepEqual(await attempts(client, email, direct), [...underLimit, 429]);
    });
  });

  describe(`dashboard sign-in limit per client network (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());
    beforeEach(() => env.clock.advance(NEXT_WINDOW_MS));

    it('counts every address of one IPv6 /64 as one client', async () => {
      const { email, client } = await signInPage(env);
      const sameNetwork = tries(LOGIN_ATTEMPTS_PER_MINUTE + 1).map((i) => ({
        remoteAddress: `2001:db8:5:6:${i.toString(16)}::${i + 1}`,
      }));
      assert.deepEqual(await attempts(client, email, sameNetwork), [...underLimit, 429]);
      assert.deepEqual(await attempts(client, email, [{ remoteAddress: '2001:db8:5:7::1' }]), [422]);
    });

    it('counts an IPv4 client the same whether its address is written IPv4-mapped or not', async () => {
      const { email, client } = await signInPage(env);
      const mixed = tries(LOGIN_ATTEMPTS_PER_MINUTE + 1).map((i) => ({
        remoteAddress: i % 2 === 0 ? '::ffff:203.0.113.9' : '203.0.113.9',
      }));
      assert.deepEqual(await attempts(client, email, mixed), [...underLimit, 429]);
    });
  });
}
