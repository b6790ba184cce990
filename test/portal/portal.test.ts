import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { INVITE_TTL_MS } from '../../src/modules/portal/invites.js';
import { PORTAL_LOGIN_ATTEMPTS_PER_MINUTE } from '../../src/modules/portal/pages/access.js';
import { MAX_PASSWORD_LENGTH } from '../../src/modules/users/passwords.js';
import { signedInClient } from '../dashboard/client.js';
import { expectError, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv } from '../payouts/http.js';
import { Receiver } from '../receiver.js';
import { invite, invitedPartner, PARTNER_PASSWORD, PortalClient } from './client.js';

for (const dialect of testedDialects()) {
  describe(`partner portal over HTTP (${dialect})`, () => {
    let env: HttpEnv;
    let offerId: string;
    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      const offer = await env.http('POST', '/api/v1/offers', {
        body: {
          name: 'Summer sale',
          destinationUrl: 'https://shop.example/',
          revenueCents: 987654,
          payoutCents: 1250,
          conversionStatus: 'approved',
        },
      });
      offerId = offer.body.id;
    });
    after(() => env.close());

    describe('POST /api/v1/partners/:id/invite', () => {
      it('returns a one-time link valid for 7 days for an active partner', async () => {
        const partner = await env.http('POST', '/api/v1/partners', { body: { name: 'Inv', email: 'inv@example.com' } });
        const res = await env.http('POST', `/api/v1/partners/${partner.body.id}/invite`);
        assert.equal(res.status, 201);
        assert.equal(res.body.partnerId, partner.body.id);
        assert.match(res.body.url, /^http:\/\/[^/]+\/portal\/invite\?token=[A-Za-z0-9_-]{43}$/);
        assert.equal(res.body.expiresAt, new Date(env.clock.now() + INVITE_TTL_MS).toISOString());
        const stored = await env.ctx.db.read
          .selectFrom('partner_invites')
          .selectAll()
          .where('partner_id', '=', partner.body.id)
          .execute();
        const token = new URL(res.body.url).searchParams.get('token') ?? '';
        assert.ok(token, 'the link carries a token');
        assert.equal(stored.length, 1, 'the invite is stored');
        assert.ok(
          stored.every((row) => !JSON.stringify(row).includes(token)),
          'the token itself is not stored',
        );
      });

      it('refuses applicants and banned partners with 409, and another brand with 404', async () => {
        const applicant = await env.http('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: env.brand.slug, name: 'App', email: 'app@example.com' },
        });
        assert.match(
          expectError(await env.http('POST', `/api/v1/partners/${applicant.body.id}/invite`), 409, 'conflict').message,
          /applicant/,
        );
        const banned = await env.http('POST', '/api/v1/partners', { body: { name: 'B', email: 'b@example.com' } });
        await env.http('POST', `/api/v1/partners/${banned.body.id}/ban`);
        expectError(await env.http('POST', `/api/v1/partners/${banned.body.id}/invite`), 409, 'conflict');
        const other = await env.createBrand('Other');
        expectError(
          await env.http('POST', `/api/v1/partners/${banned.body.id}/invite`, { key: other.apiKey }),
          404,
          'not_found',
        );
        expectError(await env.http('POST', '/api/v1/partners/prt_nope/invite'), 404, 'not_found');
      });
    });

    describe('invites, passwords and sign-in', () => {
      it('sets the password from the invite, signs in, and the link works only once', async () => {
        const created = await env.http('POST', '/api/v1/partners', {
          body: { name: 'Once', email: 'Once@Example.com' },
        });
        const link = await invite(env, created.body.id);
        const token = new URLSearchParams(link.split('?')[1]).get('token') ?? '';
        const client = new PortalClient(env.base);
        const page = await client.get(link);
        assert.equal(page.status, 200);
        assert.match(page.body, /Set your password/);
        const short = await client.post('/portal/invite', { token, password: 'short', confirm: 'short' });
        assert.equal(short.status, 422);
        assert.match(short.body, /at least 10 characters/);
        const mismatch = await client.post('/portal/invite', {
          token,
          password: PARTNER_PASSWORD,
          confirm: 'other one!!',
        });
        assert.equal(mismatch.status, 422);
        const ok = await client.post('/portal/invite', {
          token,
          password: PARTNER_PASSWORD,
          confirm: PARTNER_PASSWORD,
        });
        assert.equal(ok.status, 303);
        assert.equal(ok.location, '/portal');
        const cookie = ok.headers.getSetCookie().find((c) => c.startsWith('affitrack_portal_session='));
        assert.ok(cookie);
        assert.match(cookie, /HttpOnly/i);
        assert.match(cookie, /Path=\/portal/);
        assert.match(cookie, /SameSite=Lax/i);
        assert.match((await client.get('/portal')).body, /Overview/);
        assert.equal((await new PortalClient(env.base).get(link)).status, 404);

        const fresh = new PortalClient(env.base);
        assert.equal((await fresh.signIn('once@example.com', 'wrong password!')).status, 422);
        const signedIn = await fresh.signIn('ONCE@example.com');
        assert.equal(signedIn.status, 303);
        assert.equal((await fresh.get('/portal/earnings')).status, 200);
      });

      it("signs a partner in whatever accounts other brands made under the partner's e-mail", async () => {
        env.clock.advance(61_000);
        const { email } = await invitedPartner(env, 'Sought after');
        const other = await env.createBrand('Other Brand');
        // Six accounts of another brand under the same e-mail, each signed in to since.
        for (let i = 0; i < 6; i++) {
          const created = await env.http('POST', '/api/v1/partners', {
            key: other.apiKey,
            body: { name: `Squatter ${i}`, email: email.toUpperCase() },
          });
          const link = await invite(env, created.body.id, other.apiKey);
          const token = new URLSearchParams(link.split('?')[1]).get('token') ?? '';
          const squatter = new PortalClient(env.base);
          await squatter.get(link);
          const password = `squatter password ${i}`;
          assert.equal((await squatter.post('/portal/invite', { token, password, confirm: password })).status, 303);
          env.clock.advance(1000);
        }
        env.clock.advance(61_000);
        const partner = new PortalClient(env.base);
        assert.equal((await partner.signIn(email)).status, 303);
        assert.match((await partner.get('/portal')).body, /Test Brand · partner portal/);
        const squatter = new PortalClient(env.base);
        assert.equal((await squatter.signIn(email, 'squatter password 3')).status, 303);
        assert.match((await squatter.get('/portal')).body, /Other Brand · partner portal/);
        env.clock.advance(61_000);
      });

      it('signs in an account whose password was set before sign-in keys, and keys it', async () => {
        env.clock.advance(61_000);
        const { partnerId, email } = await invitedPartner(env, 'Set long ago');
        const keyOf = async () =>
          (
            await env.ctx.db.read
              .selectFrom('partner_accounts')
              .select('sign_in_key')
              .where('partner_id', '=', partnerId)
              .executeTakeFirstOrThrow()
          ).sign_in_key;
        assert.notEqual(await keyOf(), null, 'an accepted invite keys the account');
        await env.ctx.db.transact((trx) =>
          trx.updateTable('partner_accounts').set({ sign_in_key: null }).where('partner_id', '=', partnerId).execute(),
        );
        assert.equal((await new PortalClient(env.base).signIn(email, 'not the password')).status, 422);
        assert.equal(await keyOf(), null);
        assert.equal((await new PortalClient(env.base).signIn(email)).status, 303);
        assert.notEqual(await keyOf(), null, 'keyed by the sign-in');
        assert.equal((await new PortalClient(env.base).signIn(email)).status, 303);
        env.clock.advance(61_000);
      });

      it('refuses a password longer than the maximum as a wrong one, never checking a cut-off part of it', async () => {
        env.clock.advance(61_000);
        const created = await env.http('POST', '/api/v1/partners', {
          body: { name: 'Longest', email: 'longest@example.com' },
        });
        const link = await invite(env, created.body.id);
        const token = new URLSearchParams(link.split('?')[1]).get('token') ?? '';
        const password = 'q'.repeat(MAX_PASSWORD_LENGTH);
        const client = new PortalClient(env.base);
        await client.get(link);
        assert.equal((await client.post('/portal/invite', { token, password, confirm: password })).status, 303);
        for (const longer of [`${password}WRONG-SUFFIX`, `${password}q`]) {
          const refused = await new PortalClient(env.base).signIn('longest@example.com', longer);
          assert.equal(refused.status, 422, `${longer.length} characters`);
          assert.match(refused.body, /The email or password is not correct\./);
        }
        assert.equal((await new PortalClient(env.base).signIn('longest@example.com', password)).status, 303);
        env.clock.advance(61_000);
      });

      it('tells a banned partner with the right password that the account is suspended, and a wrong password only that it is wrong', async () => {
        env.clock.advance(61_000);
        const { partnerId, email } = await invitedPartner(env, 'Banned Later');
        assert.equal((await env.http('POST', `/api/v1/partners/${partnerId}/ban`)).status, 200);
        const banned = await new PortalClient(env.base).signIn(email);
        assert.equal(banned.status, 403);
        assert.match(banned.body, /Your partner account is suspended: the brand has banned it/);
        assert.doesNotMatch(banned.body, /not correct/);
        assert.ok(!banned.headers.get('set-cookie')?.includes('affitrack_portal_session='), 'no session');
        // A wrong password reads as for an e-mail without an account: nothing said about the ban.
        const wrong = await new PortalClient(env.base).signIn(email, 'not the password');
        assert.equal(wrong.status, 422);
        assert.match(wrong.body, /The email or password is not correct\./);
        assert.doesNotMatch(wrong.body, /account is suspended/);
        const nobody = await new PortalClient(env.base).signIn('nobody-here@example.com', 'not the password');
        assert.equal(nobody.status, 422);
        env.clock.advance(61_000);
      });

      it('refuses an expired invite and one replaced by a newer invite', async () => {
        const created = await env.http('POST', '/api/v1/partners', { body: { name: 'Exp', email: 'exp@example.com' } });
        const first = await invite(env, created.body.id);
        const second = await invite(env, created.body.id);
        const client = new PortalClient(env.base);
        assert.equal((await client.get(first)).status, 404);
        assert.equal((await client.get(second)).status, 200);
        env.clock.advance(INVITE_TTL_MS + 1);
        const page = await client.get(second);
        assert.equal(page.status, 404);
        assert.match(page.body, /cannot be used/);
      });

      it('resets a password through a new invite and ends the sessions opened with the old one', async () => {
        const { client, partnerId, email } = await invitedPartner(env, 'Reset Me');
        const link = await invite(env, partnerId);
        const token = new URLSearchParams(link.split('?')[1]).get('token') ?? '';
        const other = new PortalClient(env.base);
        await other.get(link);
        const newPassword = 'a brand new password';
        assert.equal(
          (await other.post('/portal/invite', { token, password: newPassword, confirm: newPassword })).status,
          303,
        );
        const old = await client.get('/portal/earnings');
        assert.equal(old.status, 303);
        assert.match(old.location ?? '', /^\/portal\/login/);
        assert.equal((await new PortalClient(env.base).signIn(email)).status, 422);
        assert.equal((await new PortalClient(env.base).signIn(email, newPassword)).status, 303);
      });

      it(`throttles sign-in to ${PORTAL_LOGIN_ATTEMPTS_PER_MINUTE} attempts per minute per client`, async () => {
        env.clock.advance(61_000);
        const client = new PortalClient(env.base);
        await client.get('/portal/login');
        const statuses: number[] = [];
        for (let i = 0; i <= PORTAL_LOGIN_ATTEMPTS_PER_MINUTE; i++) {
          statuses.push((await client.post('/portal/login', { email: 'nobody@example.com', password: 'x' })).status);
        }
        assert.deepEqual(statuses, [...Array(PORTAL_LOGIN_ATTEMPTS_PER_MINUTE).fill(422), 429]);
        const limited = await client.post('/portal/login', { email: 'nobody@example.com', password: 'x' });
        assert.equal(limited.status, 429);
        assert.ok(Number(limited.headers.get('retry-after')) > 0);
        env.clock.advance(61_000);
      });

      it('refuses a form post without the CSRF token of the page', async () => {
        const client = new PortalClient(env.base);
        await client.get('/portal/login');
        client.csrf = 'forged';
        assert.equal((await client.post('/portal/login', { email: 'a@b.c', password: 'x' })).status, 403);
      });
    });

    describe('pages', () => {
      it('shows earnings, conversions and offers of the partner, never the brand revenue', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Pages Partner');
        const conversion = await env.http('POST', '/api/v1/conversions', {
          body: { offerId, partnerId, sub1: 'spring-mail' },
        });
        assert.equal(conversion.status, 201);
        const overview = await client.get('/portal');
        assert.equal(overview.status, 200);
        assert.match(overview.body, /\$12\.50/);
        assert.match(overview.body, /<svg class="chart"/);
        const conversions = await client.get('/portal/conversions?status=approved');
        assert.match(conversions.body, new RegExp(conversion.body.id));
        assert.match(conversions.body, /spring-mail/);
        const offers = await client.get('/portal/offers');
        assert.match(offers.body, new RegExp(`/t/${offerId}/${partnerId}`));
        const builder = await client.get(`/portal/offers/${offerId}?sub1=news&sub3=a%26b`);
        assert.match(builder.body, new RegExp(`/t/${offerId}/${partnerId}\\?sub1=news&amp;sub3=a%26b`));
        const earnings = await client.get('/portal/earnings');
        assert.match(earnings.body, /\$12\.50/);
        for (const page of [overview, conversions, offers, builder, earnings]) {
          assert.ok(!/9,876\.54|987654/.test(page.body), 'the brand revenue never appears');
        }
        const range = await client.get('/portal?from=2026-02-30&to=2026-03-01');
        assert.equal(range.status, 422);
        assert.equal((await client.get('/portal/conversions?colour=red')).status, 422);
      });

      it("answers an address the router cannot decode with the portal's 400 page, not the API's JSON", async () => {
        const { client } = await invitedPartner(env, 'Encoding Partner');
        const visitor = new PortalClient(env.base);
        for (const [who, as] of [
          ['signed in', client],
          ['signed out', visitor],
        ] as const) {
          for (const url of ['/portal/offers/%zz', '/portal/conversions/%ff', '/portal/no-such-page/%']) {
            const res = await as.get(url);
            const where = `${who} GET ${url}`;
            assert.equal(res.status, 400, where);
            assert.match(String(res.headers.get('content-type')), /^text\/html/, where);
            assert.match(res.body, /<h1>Bad request<\/h1>/, where);
            assert.match(res.body, /not validly encoded/, where);
            assert.match(res.body, /href="\/portal"/, `${where}: a way back`);
            assert.equal(res.headers.get('cache-control'), 'no-store', where);
            assert.match(String(res.headers.get('content-security-policy')), /script-src 'self'/, where);
            assert.ok(res.headers.get('x-request-id'), where);
          }
        }
        const overlong = await client.get(`/portal/offers/off_${'x'.repeat(1001)}`);
        assert.equal(overlong.status, 404);
        assert.match(overlong.body, /<h1>Not found<\/h1>/);
      });

      it('shows no earning for a rejected conversion, and documents payoutCents as earned only once approved', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Rejected Partner');
        const held = await env.http('POST', '/api/v1/offers', {
          body: {
            name: 'Held',
            destinationUrl: 'https://shop.example/',
            payoutCents: 100,
            conversionStatus: 'pending',
          },
        });
        const conversion = await env.http('POST', '/api/v1/conversions', {
          body: { offerId: held.body.id, partnerId, payoutCents: 4242 },
        });
        assert.equal(conversion.status, 201);
        assert.equal((await env.http('POST', `/api/v1/conversions/${conversion.body.id}/reject`)).status, 200);
        const page = (await client.get('/portal/conversions?status=rejected')).body;
        const row = /<tr>(?:(?!<\/tr>).)*rejected(?:(?!<\/tr>).)*<\/tr>/s.exec(page)?.[0] ?? '';
        assert.match(row, new RegExp(conversion.body.id), 'the rejected conversion is listed');
        assert.doesNotMatch(row, /42\.42/, 'no earning shown for it');
        assert.match(row, /data-label="You earn"><span class="muted">—<\/span>/);
        const doc = await env.http('GET', '/api/v1/openapi.json', { key: null });
        const described = doc.body.components.schemas.PartnerConversion.properties.payoutCents.description;
        assert.match(described, /once the conversion is approved/);
        assert.match(described, /rejected conversion earns nothing/);
      });

      it("names only active offers and those of the partner's own conversions, and attaches postbacks to active offers only", async () => {
        const offer = async (name: string, status?: string) => {
          const res = await env.http('POST', '/api/v1/offers', {
            body: { name, destinationUrl: 'https://shop.example/', payoutCents: 100, ...(status ? { status } : {}) },
          });
          assert.equal(res.status, 201, JSON.stringify(res.body));
          return res.body.id as string;
        };
        const retired = await offer('Retired offer');
        const seller = await invitedPartner(env, 'Retired Seller');
        const sold = await env.http('POST', '/api/v1/conversions', {
          body: { offerId: retired, partnerId: seller.partnerId },
        });
        assert.equal(sold.status, 201);
        assert.equal(
          (await env.http('PATCH', `/api/v1/offers/${retired}`, { body: { status: 'archived' } })).status,
          200,
        );
        // More active offers than the old menu's first 100, all newer than the retired one.
        for (let i = 0; i < 101; i++) await offer(`Active ${i}`);
        const paused = await offer('SECRET upcoming launch', 'paused');
        const archived = await offer('SECRET old deal', 'archived');
        const stranger = await invitedPartner(env, 'Menu Stranger');

        const menu = (body: string) =>
          [...(/<select id="offerId"[^>]*>(.*?)<\/select>/s.exec(body)?.[1] ?? '').matchAll(/value="([^"]*)"/g)].map(
            (m) => m[1],
          );
        const strangerPage = (await stranger.client.get('/portal/conversions')).body;
        for (const secret of ['SECRET', paused, archived, 'Retired offer', retired]) {
          assert.ok(!strangerPage.includes(secret), `a partner without conversions of it sees ${secret}`);
        }
        assert.ok(menu(strangerPage).includes(offerId), 'active offers are listed');
        assert.equal(menu(strangerPage).filter((id) => id?.startsWith('off_')).length >= 102, true, 'all of them');

        const sellerPage = (await seller.client.get('/portal/conversions')).body;
        assert.ok(menu(sellerPage).includes(retired), "the offer of the partner's own conversion is in the menu");
        assert.match(
          sellerPage,
          /<td class="name" data-label="Offer">Retired offer<\/td>/,
          'its conversion shows its name',
        );
        assert.doesNotMatch(sellerPage, /SECRET/);

        await stranger.client.get('/portal/postbacks');
        for (const hidden of [paused, archived, retired]) {
          const refused = await stranger.client.post('/portal/postbacks', {
            url: 'https://partner.example/pb?c={click_id}',
            offerId: hidden,
            events: ['conversion.created'],
          });
          assert.equal(refused.status, 422);
          assert.match(refused.body, /<p class="field-error" id="offerId-error">[^<]*no offer with this id/, hidden);
          assert.doesNotMatch(refused.body, /SECRET|Retired offer/, 'the refused id names no offer');
          const after = (await stranger.client.get('/portal/postbacks')).body;
          assert.doesNotMatch(after, /Postback URL added/);
        }
        const added = await stranger.client.post('/portal/postbacks', {
          url: 'https://partner.example/pb?c={click_id}',
          offerId,
          events: ['conversion.created'],
        });
        assert.equal(added.status, 303);
        const listed = (await stranger.client.get('/portal/postbacks')).body;
        assert.match(listed, /Postback URL added/);
        assert.match(listed, /<td class="name" data-label="Offer">Summer sale<\/td>/);
      });

      it('says why a day that is not in the calendar, or a reversed range, cannot be shown, instead of dropping the filter', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Day Range Partner');
        const recorded = await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
        assert.equal(recorded.status, 201);
        const today = new Date(env.clock.now()).toISOString().slice(0, 10);
        const shown = await client.get(`/portal/conversions?from=${today}&to=${today}`);
        assert.equal(shown.status, 200);
        assert.match(shown.body, new RegExp(recorded.body.id));
        for (const [query, field, problem] of [
          ['from=2026-02-31', 'from', 'is not a calendar date'],
          [`from=${today}&to=2026-13-01`, 'to', 'is not a calendar date'],
          ['from=2026-12-01&to=2026-11-01', 'from', 'must not be after to'],
        ] as const) {
          const page = await client.get(`/portal/conversions?${query}`);
          assert.equal(page.status, 422, query);
          assert.match(
            page.body,
            new RegExp(`<a href="#${field}">(From|To) \\(day, brand time zone\\)</a>: ${problem}`),
            query,
          );
          assert.match(page.body, /role="alert"/, query);
          assert.doesNotMatch(page.body, new RegExp(recorded.body.id), `${query}: no list that looks filtered`);
          assert.doesNotMatch(page.body, /No conversions match/, query);
        }
        const reversed = (await client.get('/portal/conversions?from=2026-12-01&to=2026-11-01')).body;
        assert.match(reversed, /id="from"[^>]*aria-invalid="true"/);
        assert.match(reversed, /value="2026-12-01"/, 'the days entered are kept');
      });

      it('ties a refused day range to its date fields on the overview and the conversions alike, with the focus on the summary', async () => {
        const { client } = await invitedPartner(env, 'Range Fields Partner');
        for (const [path, field, problem] of [
          ['/portal?from=2026-13-01&to=2026-11-10', 'from', 'is not a calendar date'],
          ['/portal?from=2026-11-01&to=2026-02-30', 'to', 'is not a calendar date'],
          ['/portal/conversions?from=2026-11-20&to=2026-11-01', 'from', 'must not be after to'],
          ['/portal/conversions?from=2026-11-01&to=2026-13-40', 'to', 'is not a calendar date'],
        ] as const) {
          const page = await client.get(path);
          assert.equal(page.status, 422, path);
          assert.match(
            page.body,
            /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/,
            path,
          );
          const input = new RegExp(`<input id="${field}"[^>]*>`).exec(page.body)?.[0] ?? '';
          assert.match(input, /aria-invalid="true"/, `${path}: ${input}`);
          assert.match(input, new RegExp(`aria-describedby="${field}-error"`), `${path}: ${input}`);
          assert.match(page.body, new RegExp(`<p class="field-error" id="${field}-error">${problem}</p>`), path);
          const other = field === 'from' ? 'to' : 'from';
          assert.doesNotMatch(
            new RegExp(`<input id="${other}"[^>]*>`).exec(page.body)?.[0] ?? '',
            /aria-invalid/,
            path,
          );
        }
      });

      it('charts the last days of the calendar, never stepping past 9999-12-31 (the next day sorts before it as text)', async () => {
        const { client } = await invitedPartner(env, 'Calendar End Partner');
        const page = await client.get('/portal?from=9999-12-30&to=9999-12-31');
        assert.equal(page.status, 200);
        assert.match(page.body, /2 bars per series/);
        assert.doesNotMatch(page.body, /10000-/);
      });

      it("charts a partner's earnings in the currency they were earned in, never only the brand's", async () => {
        const { client, partnerId } = await invitedPartner(env, 'Euro Partner');
        const euroOffer = await env.http('POST', '/api/v1/offers', {
          body: { name: 'Euro', destinationUrl: 'https://shop.example/', currency: 'EUR', payoutCents: 700 },
        });
        const res = await env.http('POST', '/api/v1/conversions', { body: { offerId: euroOffer.body.id, partnerId } });
        assert.equal(res.status, 201);
        const overview = (await client.get('/portal')).body;
        assert.match(overview, /Earnings per day in EUR/);
        assert.doesNotMatch(overview, /Earnings per day in USD/, 'nothing earned in the brand currency');
        assert.match(overview, /Earnings: €7\.00/);
      });

      it("names every column of the API keys table, the Revoke buttons' one too", async () => {
        const { client } = await invitedPartner(env, 'Key Columns Partner');
        await client.get('/portal/api-keys');
        const created = await client.post('/portal/api-keys', { name: 'Columns key', formId: 'columns-form' });
        assert.equal(created.status, 200);
        const page = (await client.get('/portal/api-keys')).body;
        assert.match(page, /Revoke Columns key/);
        assert.doesNotMatch(page, /<th scope="col"><\/th>/);
        assert.match(page, /<th scope="col">Actions<\/th>/);
      });

      it('counts a line break of the account text as one character, as the textarea does, and stores it as LF', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Multiline Details Partner');
        await client.get('/portal/payout-details');
        // 9 lines: 494 characters in the textarea (maxlength 500), 502 as the browser posts them (CRLF).
        const lines = Array(9).fill('IBAN DE89 3704 0044 0532 0130 00 Holder Name Street 12');
        const typed = lines.join('\n');
        assert.equal(typed.length, 494);
        const saved = await client.post('/portal/payout-details', {
          method: 'Bank transfer (IBAN)',
          account: lines.join('\r\n'),
        });
        assert.equal(saved.status, 303, saved.body);
        const stored = await env.ctx.db.read
          .selectFrom('partner_accounts')
          .select('payout_account')
          .where('partner_id', '=', partnerId)
          .executeTakeFirstOrThrow();
        assert.equal(stored.payout_account, typed);
        // The brand's API shows the payout with the text as the partner's field counted it.
        await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
        env.clock.advance(1000);
        const run = await env.http('POST', '/api/v1/payouts', {
          body: { upTo: new Date(env.clock.now()).toISOString(), partnerId },
        });
        assert.equal(run.status, 201);
        const detail = await env.http('GET', `/api/v1/payouts/${run.body.data[0].id}`);
        assert.equal(detail.body.payoutAccount, typed);
      });

      it('shows a refused account text again as typed, 422, beside its field with the focus on the summary', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Refused Details Partner');
        await client.get('/portal/payout-details');
        await client.post('/portal/payout-details', { method: 'PayPal', account: 'kept@partner.example' });
        const tooLong = `${'A'.repeat(250)}\r\n${'B'.repeat(250)}`; // 501 characters as the field counts them
        const refused = await client.post('/portal/payout-details', { method: 'Wise', account: tooLong });
        assert.equal(refused.status, 422);
        const body = refused.body;
        assert.match(body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
        assert.match(body, /<a href="#account">Account<\/a>: must be at most 500 characters/);
        const textarea = /<textarea id="account"[^>]*>([^<]*)<\/textarea>/.exec(body);
        assert.ok(textarea, 'the account field is on the page');
        assert.match(textarea[0], /aria-invalid="true"/);
        assert.match(textarea[0], /aria-describedby="account-hint account-error"/);
        assert.match(textarea[0], /maxlength="500"/);
        assert.equal(textarea[1]?.replace(/\r\n/g, '\n'), `${'A'.repeat(250)}\n${'B'.repeat(250)}`);
        assert.match(body, /<p class="field-error" id="account-error">must be at most 500 characters/);
        assert.match(body, /<option value="Wise" selected>Wise<\/option>/);
        const stored = await env.ctx.db.read
          .selectFrom('partner_accounts')
          .select(['payout_method', 'payout_account'])
          .where('partner_id', '=', partnerId)
          .executeTakeFirstOrThrow();
        assert.deepEqual(stored, { payout_method: 'PayPal', payout_account: 'kept@partner.example' });
      });

      it('stores payout details that the brand sees with the payout', async () => {
        const { client, partnerId } = await invitedPartner(env, 'Details Partner');
        await client.get('/portal/payout-details');
        const saved = await client.post('/portal/payout-details', { method: 'PayPal', account: 'pay@partner.example' });
        assert.equal(saved.status, 303);
        const details = (await client.get('/portal/payout-details')).body;
        assert.match(details, /pay@partner\.example/);
        // The hint under the account field is read with it.
        assert.match(details, /<textarea id="account"[^>]*aria-describedby="account-hint"/);
        assert.match(details, /<p class="hint" id="account-hint">\s*For example your PayPal/);
        const bad = await client.post('/portal/payout-details', { method: 'Gold bars', account: 'x' });
        assert.equal(bad.status, 422);
        assert.match(bad.body, /choose one of the listed methods/);
        await env.http('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
        env.clock.advance(1000);
        const run = await env.http('POST', '/api/v1/payouts', {
          body: { upTo: new Date(env.clock.now()).toISOString(), partnerId },
        });
        const detail = await env.http('GET', `/api/v1/payouts/${run.body.data[0].id}`);
        assert.equal(detail.body.payoutMethod, 'PayPal');
        assert.equal(detail.body.payoutAccount, 'pay@partner.example');
        assert.match((await client.get('/portal/earnings')).body, /created/);
      });

      it('adds a postback URL, sends a test with filled-in macros and shows real sends in the log', async () => {
        const receiver = await Receiver.start(() => ({
          status: 200,
          body: 'thanks',
          headers: { 'content-type': 'text/plain' },
        }));
        try {
          const { client } = await invitedPartner(env, 'Postback Partner');
          await client.get('/portal/postbacks');
          const added = await client.post('/portal/postbacks', {
            url: `${receiver.origin}/pb?cid={click_id}&payout={payout}&s={sub1}`,
            events: ['conversion.created'],
          });
          assert.equal(added.status, 303);
          const page = await client.get('/portal/postbacks');
          // Every column is named, the buttons' one too (an empty header reads as nothing).
          assert.doesNotMatch(page.body, /<th scope="col"><\/th>/);
          assert.match(page.body, /<th scope="col">Actions<\/th>/);
          const id = /\/portal\/postbacks\/(pbk_[A-Z0-9]+)\/test/.exec(page.body)?.[1];
          assert.ok(id, 'the template has a test button');
          const tested = await client.post(`/portal/postbacks/${id}/test`);
          assert.equal(tested.status, 303);
          assert.deepEqual(
            receiver.requests.map((r) => r.path),
            ['/pb?cid=clk_TEST&payout=10.00&s=test'],
          );
          assert.match((await client.get('/portal/postbacks')).body, /HTTP 200 in \d+ ms\. Response: thanks/);
          const invalid = await client.post('/portal/postbacks', { url: 'ftp://x', events: ['conversion.created'] });
          assert.equal(invalid.status, 422);
          assert.match(invalid.body, /absolute http\(s\) URL/);
        } finally {
          await receiver.close();
        }
      });

      it('shows a refused postback URL again as entered, the problem beside the field and the focus on the summary', async () => {
        const { client } = await invitedPartner(env, 'Refused Postback Partner');
        await client.get('/portal/postbacks');
        const url = 'ftp://example.com/x?c={click_id}&amp;p=1';
        const refused = await client.post('/portal/postbacks', { url, events: ['conversion.approved'] });
        assert.equal(refused.status, 422, 'a 422 page, not a redirect that forgets the form');
        const body = refused.body;
        // The summary takes the focus (autofocus) and links to the field by its label.
        assert.match(body, /<div class="flash error" role="alert" id="error-summary" tabindex="-1" autofocus>/);
        assert.match(body, /<a href="#url">Postback URL<\/a>: must be an absolute http\(s\) URL/);
        assert.doesNotMatch(body, /Validation failed/);
        // What was entered is kept, escaped: the URL and the ticked events (the default one no longer ticked).
        const field = /<input id="url"[^>]*>/.exec(body)?.[0] ?? '';
        assert.match(field, /value="ftp:\/\/example\.com\/x\?c=\{click_id\}&amp;amp;p=1"/);
        assert.match(field, /aria-invalid="true"/);
        assert.match(field, /aria-describedby="url-hint url-error"/);
        assert.match(body, /<p class="field-error" id="url-error">must be an absolute http\(s\) URL/);
        assert.match(
          body,
          /<input type="checkbox" id="events-\d" name="events" value="conversion\.approved" checked\/>/,
        );
        assert.doesNotMatch(body, /value="conversion\.created" checked/);
        assert.doesNotMatch((await client.get('/portal/postbacks')).body, /ftp:\/\/example\.com/, 'nothing was stored');
        // No event ticked is a problem of the events, shown beside them.
        const noEvents = await client.post('/portal/postbacks', { url: 'https://partner.example/pb' });
        assert.equal(noEvents.status, 422);
        assert.match(noEvents.body, /<fieldset id="events" aria-describedby="events-error">/);
        assert.match(noEvents.body, /value="https:\/\/partner\.example\/pb"/);
      });
    });

    describe('isolation', () => {
      it('keeps partner and brand sessions apart', async () => {
        const { client } = await invitedPartner(env, 'Apart');
        // The partner's cookie means nothing to the dashboard…
        const dashboard = await fetch(`${env.base}/dashboard`, {
          headers: { cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
          redirect: 'manual',
        });
        assert.equal(dashboard.status, 303);
        assert.match(dashboard.headers.get('location') ?? '', /^\/dashboard\/login/);
        // …and a brand user's session means nothing to the portal.
        const brandUser = await signedInClient(env);
        const portal = await fetch(`${env.base}/portal`, {
          headers: { cookie: [...brandUser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
          redirect: 'manual',
        });
        assert.equal(portal.status, 303);
        assert.equal(portal.headers.get('location'), '/portal/login');
      });

      it("answers every portal route with a second partner's and a second brand's session without showing the first partner's data", async () => {
        const first = await invitedPartner(env, 'First Partner');
        await env.http('POST', '/api/v1/conversions', {
          body: { offerId, partnerId: first.partnerId, sub1: 'first-secret-sub' },
        });
        await first.client.get('/portal/postbacks');
        await first.client.post('/portal/postbacks', {
          url: 'https://first.example/secret-pb?c={click_id}',
          events: ['conversion.created'],
        });
        const postbackId =
          /\/portal\/postbacks\/(pbk_[A-Z0-9]+)\/test/.exec((await first.client.get('/portal/postbacks')).body)?.[1] ??
          '';
        assert.match(postbackId, /^pbk_/);
        await first.client.get('/portal/payout-details');
        await first.client.post('/portal/payout-details', { method: 'PayPal', account: 'first-secret@pay.example' });

        const second = await invitedPartner(env, 'Second Partner');
        const otherBrand = await env.createBrand('Second Brand');
        const third = await invitedPartner(env, 'Other Brand Partner', otherBrand.apiKey);
        const secrets = [first.partnerId, 'first-secret-sub', 'first.example', 'first-secret@pay.example'];

        const routes = env.app
          .printRoutes({ commonPrefix: false })
          .split('\n')
          .filter((line) => line.includes('/portal'));
        assert.ok(routes.length > 0);
        const gets = [
          '/portal',
          '/portal/offers',
          `/portal/offers/${offerId}`,
          '/portal/conversions',
          `/portal/conversions?offerId=${offerId}`,
          '/portal/earnings',
          '/portal/postbacks',
          '/portal/payout-details',
        ];
        for (const { client } of [second, third]) {
          for (const path of gets) {
            const page = await client.get(path);
            assert.ok(page.status === 200 || page.status === 404, `${path}: ${page.status}`);
            for (const secret of secrets) assert.ok(!page.body.includes(secret), `${path} shows ${secret}`);
          }
          for (const path of [`/portal/postbacks/${postbackId}/test`, `/portal/postbacks/${postbackId}/delete`]) {
            await client.get('/portal/postbacks');
            const res = await client.post(path);
            assert.equal(res.status, 404, `${path}: ${res.status}`);
          }
        }
        assert.equal((await third.client.get(`/portal/offers/${offerId}`)).status, 404);
        const kept = await first.client.get('/portal/postbacks');
        assert.match(kept.body, /first\.example\/secret-pb/);
      });
    });
  });
}
