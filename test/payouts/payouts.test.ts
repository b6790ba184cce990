import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import * as detailsAtCreation from '../../src/db/migrations/0034_payout_details_at_creation.js';
import { jsonValidator } from '../../src/http/validation.js';
import { EVENT_SCHEMAS } from '../../src/modules/events/schemas.js';
import { signedInClient } from '../dashboard/client.js';
import { expectError, type TestBrand, testedDialects } from '../helpers.js';
import { invitedPartner } from '../portal/client.js';
import { createHttpEnv, type HttpEnv } from './http.js';

const MINUTE = 60_000;

for (const dialect of testedDialects()) {
  describe(`payouts over HTTP (${dialect})`, () => {
    let env: HttpEnv;
    let offerId: string;
    let pendingOfferId: string;

    before(async () => {
      env = await createHttpEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      offerId = (
        await env.http('POST', '/api/v1/offers', {
          body: {
            name: 'Approved',
            destinationUrl: 'https://shop.example/',
            revenueCents: 5000,
            payoutCents: 1000,
            conversionStatus: 'approved',
          },
        })
      ).body.id;
      pendingOfferId = (
        await env.http('POST', '/api/v1/offers', {
          body: {
            name: 'Held',
            destinationUrl: 'https://shop.example/',
            payoutCents: 700,
            conversionStatus: 'pending',
          },
        })
      ).body.id;
    });
    after(() => env.close());

    async function partner(name: string, brand: TestBrand = env.brand): Promise<string> {
      const res = await env.http('POST', '/api/v1/partners', {
        key: brand.apiKey,
        body: { name, email: `${name.toLowerCase().replaceAll(' ', '')}@example.com` },
      });
      assert.equal(res.status, 201);
      return res.body.id;
    }
    async function conversion(partnerId: string, extra: Record<string, unknown> = {}, offer = offerId) {
      const res = await env.http('POST', '/api/v1/conversions', { body: { offerId: offer, partnerId, ...extra } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    }
    const now = () => new Date(env.clock.now()).toISOString();
    async function events(type: string) {
      const rows = await env.ctx.db.read
        .selectFrom('events')
        .select('payload')
        .where('type', '=', type)
        .where('brand_id', '=', env.brand.id)
        .orderBy('id')
        .execute();
      return rows.map((r) => JSON.parse(r.payload));
    }
    async function balances(partnerId: string) {
      const res = await env.http('GET', `/api/v1/partners/${partnerId}/balances`);
      assert.equal(res.status, 200);
      return res.body.data;
    }

    it('shows a ledger per currency: pending, payable, in a payout and paid, never summed across currencies', async () => {
      const p = await partner('Ledger');
      await conversion(p, { payoutCents: 1000 });
      await conversion(p, { revenueCents: 1000, payoutCents: 250, currency: 'EUR' });
      await conversion(p, { payoutCents: 700 }, pendingOfferId);
      const rejected = await conversion(p, { payoutCents: 9999 }, pendingOfferId);
      assert.equal((await env.http('POST', `/api/v1/conversions/${rejected.id}/reject`)).status, 200);
      assert.deepEqual(await balances(p), [
        { currency: 'EUR', pendingCents: 0, payableCents: 250, inPayoutCents: 0, paidCents: 0 },
        { currency: 'USD', pendingCents: 700, payableCents: 1000, inPayoutCents: 0, paidCents: 0 },
      ]);
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      assert.equal(run.status, 201);
      const usd = run.body.data.find((x: { currency: string }) => x.currency === 'USD');
      assert.deepEqual(await balances(p), [
        { currency: 'EUR', pendingCents: 0, payableCents: 0, inPayoutCents: 250, paidCents: 0 },
        { currency: 'USD', pendingCents: 700, payableCents: 0, inPayoutCents: 1000, paidCents: 0 },
      ]);
      assert.equal((await env.http('POST', `/api/v1/payouts/${usd.id}/mark-paid`)).status, 200);
      assert.deepEqual((await balances(p))[1], {
        currency: 'USD',
        pendingCents: 700,
        payableCents: 0,
        inPayoutCents: 0,
        paidCents: 1000,
      });
    });

    it('creates one payout per partner and currency for conversions approved up to upTo, and fires payout.created', async () => {
      const a = await partner('Run A');
      const b = await partner('Run B');
      const a1 = await conversion(a, { payoutCents: 300 });
      const a2 = await conversion(a, { payoutCents: 400 });
      const aJpy = await conversion(a, { revenueCents: 9000, payoutCents: 5000, currency: 'JPY' });
      const b1 = await conversion(b, { payoutCents: 900 });
      env.clock.advance(MINUTE);
      const upTo = now();
      env.clock.advance(MINUTE);
      const late = await conversion(a, { payoutCents: 111 }); // approved after upTo: not in this run
      const before = (await events('payout.created')).length;

      const preview = await env.http('GET', `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}`);
      assert.equal(preview.status, 200);
      assert.equal(preview.body.alreadyCreated, false);
      const previewA = preview.body.data.filter((l: { partnerId: string }) => l.partnerId === a);
      assert.deepEqual(
        previewA.map((l: Record<string, unknown>) => [l.currency, l.amountCents, l.conversionCount, l.partnerName]),
        [
          ['JPY', 5000, 1, 'Run A'],
          ['USD', 700, 2, 'Run A'],
        ],
      );

      const res = await env.http('POST', '/api/v1/payouts', { body: { upTo } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.upTo, upTo);
      const ofA = res.body.data.filter((x: { partnerId: string }) => x.partnerId === a);
      assert.deepEqual(
        ofA.map((x: Record<string, unknown>) => [x.currency, x.amountCents, x.conversionCount, x.status]).sort(),
        [
          ['JPY', 5000, 1, 'created'],
          ['USD', 700, 2, 'created'],
        ],
      );
      const ofB = res.body.data.filter((x: { partnerId: string }) => x.partnerId === b);
      assert.deepEqual(
        ofB.map((x: Record<string, unknown>) => [x.currency, x.amountCents]),
        [['USD', 900]],
      );
      const usdA = ofA.find((x: { currency: string }) => x.currency === 'USD');
      const detail = await env.http('GET', `/api/v1/payouts/${usdA.id}`);
      assert.equal(detail.status, 200);
      assert.deepEqual(
        detail.body.conversions.map((c: { conversionId: string }) => c.conversionId).sort(),
        [a1.id, a2.id].sort(),
      );
      assert.equal(detail.body.partnerName, 'Run A');
      assert.ok(!JSON.stringify(res.body).includes(late.id));
      assert.ok(!JSON.stringify(detail.body).includes(aJpy.id) && !JSON.stringify(detail.body).includes(b1.id));

      const fired = (await events('payout.created')).slice(before);
      assert.equal(fired.length, res.body.data.length);
      const validate = jsonValidator(EVENT_SCHEMAS['payout.created']);
      for (const event of fired) assert.ok(validate(event.data), JSON.stringify(validate.errors));
      const usdEvent = fired.find((e) => e.data.payoutId === usdA.id);
      assert.deepEqual(usdEvent.data, {
        payoutId: usdA.id,
        partnerId: a,
        currency: 'USD',
        amountCents: 700,
        conversionCount: 2,
        upTo,
        status: 'created',
      });
    });

    it('returns the same run with 200 when repeated with the same upTo, and 409 when its minimumCents differs', async () => {
      const p = await partner('Repeat');
      await conversion(p, { payoutCents: 500 });
      env.clock.advance(MINUTE);
      const upTo = now();
      const first = await env.http('POST', '/api/v1/payouts', { body: { upTo, partnerId: p } });
      assert.equal(first.status, 201);
      assert.equal(first.body.data.length, 1);
      const again = await env.http('POST', '/api/v1/payouts', { body: { upTo, partnerId: p } });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      const preview = await env.http('GET', `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}&partnerId=${p}`);
      assert.equal(preview.body.alreadyCreated, true);
      const error = expectError(
        await env.http('POST', '/api/v1/payouts', { body: { upTo, partnerId: p, minimumCents: 10 } }),
        409,
        'conflict',
      );
      assert.match(error.message, /already exists with minimumCents 0/);
    });

    it('refuses the preview of an existing run with another minimumCents with the 409 its POST gives', async () => {
      const p = await partner('Preview Other Minimum');
      await conversion(p, { payoutCents: 500 });
      env.clock.advance(MINUTE);
      const upTo = now();
      const created = await env.http('POST', '/api/v1/payouts', { body: { upTo, partnerId: p, minimumCents: 5 } });
      assert.equal(created.status, 201);
      const previewOf = (minimum: string) =>
        env.http('GET', `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}&partnerId=${p}${minimum}`);
      for (const minimum of ['&minimumCents=0', '']) {
        const preview = expectError(await previewOf(minimum), 409, 'conflict');
        const post = expectError(
          await env.http('POST', '/api/v1/payouts', {
            body: { upTo, partnerId: p, ...(minimum ? { minimumCents: 0 } : {}) },
          }),
          409,
          'conflict',
        );
        assert.equal(preview.message, post.message, `preview and POST say the same (${minimum || 'no minimum'})`);
        assert.match(preview.message, /already exists with minimumCents 5/);
      }
      // With the run's own minimum the preview shows the run, as the POST returns it.
      const same = await previewOf('&minimumCents=5');
      assert.equal(same.status, 200);
      assert.equal(same.body.alreadyCreated, true);
      assert.deepEqual(
        same.body.data.map((l: { amountCents: number }) => l.amountCents),
        [500],
      );
    });

    it('skips partners whose payable amount in a currency is below minimumCents', async () => {
      const small = await partner('Small');
      const large = await partner('Large');
      await conversion(small, { payoutCents: 99 });
      await conversion(large, { payoutCents: 100 });
      env.clock.advance(MINUTE);
      const upTo = now();
      const preview = await env.http(
        'GET',
        `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}&minimumCents=100`,
      );
      assert.ok(preview.body.belowMinimum.some((l: { partnerId: string }) => l.partnerId === small));
      const res = await env.http('POST', '/api/v1/payouts', { body: { upTo, minimumCents: 100 } });
      assert.equal(res.status, 201);
      const partners = res.body.data.map((x: { partnerId: string }) => x.partnerId);
      assert.ok(partners.includes(large));
      assert.ok(!partners.includes(small));
      assert.equal((await balances(small))[0].payableCents, 99);
    });

    it('refuses a future upTo, a malformed one, an unknown partner and unknown fields with 422', async () => {
      const future = new Date(env.clock.now() + MINUTE).toISOString();
      for (const [body, path] of [
        [{ upTo: future }, 'upTo'],
        [{ upTo: '2026-13-45' }, 'upTo'],
        [{ upTo: now(), partnerId: 'prt_nope' }, 'partnerId'],
        [{ upTo: now(), minimumCents: -1 }, 'minimumCents'],
        [{ upTo: now(), minimumCents: '100' }, 'minimumCents'],
        [{ upTo: now(), colour: 'red' }, 'colour'],
        [{}, 'upTo'],
      ] as const) {
        const error = expectError(await env.http('POST', '/api/v1/payouts', { body }), 422, 'validation_error');
        assert.ok(
          error.details?.some((d) => d.path === path),
          `${JSON.stringify(body)} → ${JSON.stringify(error)}`,
        );
      }
      expectError(await env.http('GET', '/api/v1/payouts/preview'), 422, 'validation_error');
    });

    it('marks a payout paid once (payout.paid with the reference) and refuses to cancel it afterwards', async () => {
      const p = await partner('Paid');
      await conversion(p, { payoutCents: 1234 });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const id = run.body.data[0].id;
      env.clock.advance(MINUTE);
      const paidAt = now();
      const paid = await env.http('POST', `/api/v1/payouts/${id}/mark-paid`, { body: { reference: 'SEPA-42' } });
      assert.equal(paid.status, 200);
      assert.equal(paid.body.status, 'paid');
      assert.equal(paid.body.paidAt, paidAt);
      assert.equal(paid.body.reference, 'SEPA-42');
      const event = (await events('payout.paid')).find((e) => e.data.payoutId === id);
      assert.ok(jsonValidator(EVENT_SCHEMAS['payout.paid'])(event.data));
      assert.deepEqual(
        [event.data.status, event.data.paidAt, event.data.reference, event.data.amountCents],
        ['paid', paidAt, 'SEPA-42', 1234],
      );
      assert.match(
        expectError(await env.http('POST', `/api/v1/payouts/${id}/mark-paid`), 409, 'conflict').message,
        /paid/,
      );
      assert.match(
        expectError(await env.http('POST', `/api/v1/payouts/${id}/cancel`), 409, 'conflict').message,
        /paid/,
      );
      expectError(await env.http('POST', '/api/v1/payouts/pay_nope/mark-paid'), 404, 'not_found');
      expectError(
        await env.http('POST', `/api/v1/payouts/${id}/mark-paid`, { body: { reference: 7 } }),
        422,
        'validation_error',
      );
    });

    it('pays to the payout details of the moment the payout was created, whatever the partner enters afterwards', async () => {
      const { client, partnerId } = await invitedPartner(env, 'Paid To');
      const enter = async (method: string, account: string) => {
        await client.get('/portal/payout-details');
        assert.equal((await client.post('/portal/payout-details', { method, account })).status, 303);
      };
      await enter('Bank transfer (IBAN)', 'DE00 1111 OLD');
      await conversion(partnerId, { payoutCents: 500 });
      env.clock.advance(MINUTE);
      const id = (await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId } })).body.data[0].id;
      const brandUser = await signedInClient(env);
      const shown = async () => {
        const { payoutMethod, payoutAccount } = (await env.http('GET', `/api/v1/payouts/${id}`)).body;
        const csv = await fetch(`${env.base}/api/v1/payouts/${id}`, {
          headers: { authorization: `Bearer ${env.brand.apiKey}`, accept: 'text/csv' },
        });
        const line = (await csv.text()).split('\r\n')[1] ?? '';
        const dashboard = (await brandUser.get(`/dashboard/payouts/${id}`)).body;
        const portal = (await client.get('/portal/earnings')).body;
        return { api: [payoutMethod, payoutAccount], csv: line, dashboard, portal };
      };
      const taken = ['Bank transfer (IBAN)', 'DE00 1111 OLD'];
      const expectTaken = async (when: string) => {
        const s = await shown();
        assert.deepEqual(s.api, taken, `${when}: the API`);
        assert.match(s.csv, /,Bank transfer \(IBAN\),DE00 1111 OLD,/, `${when}: the CSV`);
        assert.match(s.dashboard, /DE00 1111 OLD/, `${when}: the dashboard`);
        assert.match(s.portal, /Bank transfer \(IBAN\): DE00 1111 OLD/, `${when}: the portal`);
        for (const page of [s.csv, s.dashboard, s.portal]) assert.doesNotMatch(page, /attacker/, when);
      };
      await expectTaken('created');
      // Changed between the brand's export and its "mark paid": the payout still names what was exported.
      await enter('PayPal', 'attacker@evil.example');
      await expectTaken('changed before it is paid');
      assert.equal((await env.http('POST', `/api/v1/payouts/${id}/mark-paid`)).status, 200);
      await expectTaken('paid');
      await enter('Wise', 'attacker-2@evil.example');
      await expectTaken('changed after it is paid');

      // Cancelled and run again, a payout takes the details as they are then.
      const second = await conversion(partnerId, { payoutCents: 300 });
      env.clock.advance(MINUTE);
      const created = (await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId } })).body.data[0];
      await enter('PayPal', 'new@partner.example');
      assert.equal((await env.http('POST', `/api/v1/payouts/${created.id}/cancel`)).status, 200);
      env.clock.advance(MINUTE);
      const rerun = (await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId } })).body.data[0];
      const detail = (await env.http('GET', `/api/v1/payouts/${rerun.id}`)).body;
      assert.deepEqual(
        detail.conversions.map((c: { conversionId: string }) => c.conversionId),
        [second.id],
      );
      assert.deepEqual([detail.payoutMethod, detail.payoutAccount], ['PayPal', 'new@partner.example']);
      const cancelled = (await env.http('GET', `/api/v1/payouts/${created.id}`)).body;
      assert.deepEqual([cancelled.payoutMethod, cancelled.payoutAccount], ['Wise', 'attacker-2@evil.example']);
    });

    it('gives payouts created before details were taken at creation the details they showed (migration 0034)', async () => {
      const { client, partnerId } = await invitedPartner(env, 'Before 0034');
      await client.get('/portal/payout-details');
      await client.post('/portal/payout-details', { method: 'PayPal', account: 'current@partner.example' });
      const statuses = ['created', 'paid', 'cancelled'] as const;
      const ids: string[] = [];
      for (const _ of statuses) {
        await conversion(partnerId, { payoutCents: 100 });
        env.clock.advance(MINUTE);
        ids.push((await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId } })).body.data[0].id);
      }
      assert.equal((await env.http('POST', `/api/v1/payouts/${ids[1]}/mark-paid`)).status, 200);
      assert.equal((await env.http('POST', `/api/v1/payouts/${ids[2]}/cancel`)).status, 200);
      // As they were stored before 0034: only a paid payout had details (those it was marked paid with).
      await env.ctx.db.transact(async (trx) => {
        await trx
          .updateTable('payouts')
          .set({ paid_method: null, paid_account: null })
          .where('id', 'in', [ids[0] ?? '', ids[2] ?? ''])
          .execute();
        await trx
          .updateTable('payouts')
          .set({ paid_method: 'Wise', paid_account: 'paid-to@partner.example' })
          .where('id', '=', ids[1] ?? '')
          .execute();
      });
      await detailsAtCreation.up(env.ctx.db.admin as unknown as Kysely<unknown>);
      const changed = await client.post('/portal/payout-details', { method: 'Other', account: 'changed after 0034' });
      assert.equal(changed.status, 303);
      const details = [];
      for (const id of ids) {
        const { status, payoutMethod, payoutAccount } = (await env.http('GET', `/api/v1/payouts/${id}`)).body;
        details.push([status, payoutMethod, payoutAccount]);
      }
      assert.deepEqual(details, [
        ['created', 'PayPal', 'current@partner.example'],
        ['paid', 'Wise', 'paid-to@partner.example'],
        ['cancelled', 'PayPal', 'current@partner.example'],
      ]);
    });

    it('cancels a created payout and its conversions are payable again in the next run', async () => {
      const p = await partner('Cancelled');
      const c = await conversion(p, { payoutCents: 800 });
      env.clock.advance(MINUTE);
      const first = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const id = first.body.data[0].id;
      const cancelled = await env.http('POST', `/api/v1/payouts/${id}/cancel`);
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.status, 'cancelled');
      assert.equal((await balances(p))[0].payableCents, 800);
      assert.deepEqual((await env.http('GET', `/api/v1/payouts/${id}`)).body.conversions, []);
      expectError(await env.http('POST', `/api/v1/payouts/${id}/cancel`), 409, 'conflict');
      const told = (await events('payout.cancelled')).filter((e) => e.data.payoutId === id);
      assert.equal(told.length, 1, 'one payout.cancelled for the one cancel');
      assert.ok(jsonValidator(EVENT_SCHEMAS['payout.cancelled'])(told[0].data));
      assert.deepEqual(told[0].data, {
        payoutId: id,
        partnerId: p,
        currency: 'USD',
        amountCents: 800,
        conversionCount: 1,
        upTo: first.body.data[0].upTo,
        status: 'cancelled',
        cancelledAt: cancelled.body.cancelledAt,
      });
      env.clock.advance(MINUTE);
      const second = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      assert.equal(second.status, 201);
      assert.notEqual(second.body.data[0].id, id);
      const detail = await env.http('GET', `/api/v1/payouts/${second.body.data[0].id}`);
      assert.deepEqual(
        detail.body.conversions.map((x: { conversionId: string }) => x.conversionId),
        [c.id],
      );
    });

    it('previews what a repeated run pays once the run exists: nothing for its cancelled payout, as the POST pays', async () => {
      const p = await partner('Preview After Cancel');
      await conversion(p, { payoutCents: 600 });
      await conversion(p, { payoutCents: 900 });
      env.clock.advance(MINUTE);
      const upTo = now();
      const query = `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}&partnerId=${p}&minimumCents=1200`;
      const body = { upTo, partnerId: p, minimumCents: 1200 };
      const first = await env.http('POST', '/api/v1/payouts', { body });
      assert.equal(first.status, 201);
      const live = await env.http('GET', query);
      assert.equal(live.body.alreadyCreated, true);
      assert.deepEqual(
        live.body.data.map((l: { amountCents: number; conversionCount: number }) => [l.amountCents, l.conversionCount]),
        [[1500, 2]],
        'the existing run pays its created payout',
      );
      const id = first.body.data[0].id;
      assert.equal((await env.http('POST', `/api/v1/payouts/${id}/cancel`)).status, 200);
      assert.equal((await balances(p))[0].payableCents, 1500, 'the conversions are payable again');

      const preview = await env.http('GET', query);
      assert.equal(preview.status, 200);
      assert.equal(preview.body.alreadyCreated, true);
      assert.deepEqual(preview.body.data, [], 'the repeated run pays nothing');
      assert.deepEqual(preview.body.belowMinimum, []);
      const repeated = await env.http('POST', '/api/v1/payouts', { body });
      assert.equal(repeated.status, 200);
      assert.deepEqual(
        repeated.body.data.map((x: { id: string; status: string }) => [x.id, x.status]),
        [[id, 'cancelled']],
      );
      assert.equal((await balances(p))[0].payableCents, 1500, 'and it paid nothing');

      // The way the README gives: a later upTo pays them.
      env.clock.advance(MINUTE);
      const later = { upTo: now(), partnerId: p, minimumCents: 1200 };
      const laterPreview = await env.http(
        'GET',
        `/api/v1/payouts/preview?upTo=${encodeURIComponent(later.upTo)}&partnerId=${p}&minimumCents=1200`,
      );
      assert.equal(laterPreview.body.alreadyCreated, false);
      assert.deepEqual(
        laterPreview.body.data.map((l: { amountCents: number }) => l.amountCents),
        [1500],
      );
      const paid = await env.http('POST', '/api/v1/payouts', { body: later });
      assert.equal(paid.status, 201);
      assert.equal(paid.body.data[0].amountCents, 1500);
    });

    it('refuses with 409 to reject a conversion inside a created or a paid payout, naming the payout', async () => {
      const p = await partner('Locked');
      const c = await conversion(p, { payoutCents: 100 });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const id = run.body.data[0].id;
      const created = expectError(await env.http('POST', `/api/v1/conversions/${c.id}/reject`), 409, 'conflict');
      assert.match(created.message, new RegExp(`in payout ${id} \\(created, not yet paid\\); cancel that payout`));
      await env.http('POST', `/api/v1/payouts/${id}/mark-paid`);
      const paid = expectError(await env.http('POST', `/api/v1/conversions/${c.id}/reject`), 409, 'conflict');
      assert.match(paid.message, new RegExp(`paid to the partner in payout ${id}`));
      assert.equal((await env.http('GET', `/api/v1/conversions/${c.id}`)).body.status, 'approved');
    });

    it('filters payouts by a currency code in any case, and refuses a malformed code or an unknown partner with 422', async () => {
      const p = await partner('Any case');
      await conversion(p, { revenueCents: 100, payoutCents: 40, currency: 'EUR' });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const eur = run.body.data.find((x: { currency: string }) => x.currency === 'EUR');
      assert.ok(eur, JSON.stringify(run.body));
      for (const code of ['eur', 'Eur', 'EUR']) {
        const list = await env.http('GET', `/api/v1/payouts?partnerId=${p}&currency=${code}`);
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.body.data.map((x: { id: string }) => x.id),
          [eur.id],
          code,
        );
      }
      for (const code of ['EU', 'XYZ', 'e1r']) {
        const bad = expectError(await env.http('GET', `/api/v1/payouts?currency=${code}`), 422, 'validation_error');
        assert.equal(bad.details?.[0]?.path, 'query.currency', code);
      }
      const other = await partner('Other brand', await env.createBrand('Other'));
      for (const id of [other, 'prt_01M8FPNF7QD9ZY2ZH504GGR6ZZ']) {
        const unknown = expectError(await env.http('GET', `/api/v1/payouts?partnerId=${id}`), 422, 'validation_error');
        assert.deepEqual(unknown.details, [{ path: 'query.partnerId', message: 'no partner with this id' }]);
      }
    });

    it('finds payouts stored in a code withdrawn since (HRK) by that code, while new money stays strict', async () => {
      const p = await partner('Kuna');
      await conversion(p, { revenueCents: 100, payoutCents: 75, currency: 'EUR' });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const made = run.body.data[0];
      // A payout made in kuna before Croatia joined the euro (HRK left ISO 4217 in 2023).
      await env.ctx.db.transact((trx) =>
        trx.updateTable('payouts').set({ currency: 'HRK' }).where('id', '=', made.id).execute(),
      );
      for (const code of ['HRK', 'hrk']) {
        const list = await env.http('GET', `/api/v1/payouts?partnerId=${p}&currency=${code}`);
        assert.equal(list.status, 200, JSON.stringify(list.body));
        assert.deepEqual(
          list.body.data.map((x: { id: string; currency: string }) => [x.id, x.currency]),
          [[made.id, 'HRK']],
          code,
        );
      }
      for (const code of ['SLL', 'ZWL', 'DEM', 'XDR', 'BGN']) {
        const list = await env.http('GET', `/api/v1/payouts?partnerId=${p}&currency=${code}`);
        assert.equal(list.status, 200, `${code}: ${JSON.stringify(list.body)}`);
        assert.deepEqual(list.body.data, [], code);
      }
      const never = expectError(await env.http('GET', '/api/v1/payouts?currency=XYZ'), 422, 'validation_error');
      assert.deepEqual(never.details, [
        {
          path: 'query.currency',
          message: 'must be a current or withdrawn ISO 4217 currency code such as USD or HRK (any case)',
        },
      ]);
      // Creating money in it is still refused, in a body and in an offer alike.
      const created = await env.http('POST', '/api/v1/conversions', {
        body: { offerId, partnerId: p, currency: 'HRK' },
      });
      assert.equal(expectError(created, 422, 'validation_error').details?.[0]?.path, 'currency');
      const offer = await env.http('POST', '/api/v1/offers', {
        body: { name: 'Kuna offer', destinationUrl: 'https://shop.example/', currency: 'HRK' },
      });
      assert.equal(expectError(offer, 422, 'validation_error').details?.[0]?.path, 'currency');
    });

    it('lists payouts newest first with filters, and exports one as CSV with Accept: text/csv', async () => {
      const p = await partner('Csv =cmd');
      await conversion(p, { payoutCents: 1050, externalTxnId: 'order,"1"' });
      await conversion(p, { revenueCents: 100, payoutCents: 7, currency: 'EUR' });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: p } });
      const usd = run.body.data.find((x: { currency: string }) => x.currency === 'USD');
      const list = await env.http('GET', `/api/v1/payouts?partnerId=${p}&currency=USD&status=created`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.data.map((x: { id: string }) => x.id),
        [usd.id],
      );
      const page = await env.http('GET', `/api/v1/payouts?partnerId=${p}&limit=1`);
      assert.equal(page.body.data.length, 1);
      assert.ok(page.body.nextCursor);
      expectError(await env.http('GET', '/api/v1/payouts?status=lost'), 422, 'validation_error');

      const csv = await env.http('GET', `/api/v1/payouts/${usd.id}`, { headers: { accept: 'text/csv' } });
      assert.equal(csv.status, 200);
      assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
      const lines = csv.text.trimEnd().split('\r\n');
      assert.equal(lines.length, 2);
      assert.equal(
        lines[0],
        'payout_id,status,partner_id,partner_name,payout_method,payout_account,currency,conversion_id,offer_id,external_txn_id,approved_at,amount,amount_cents',
      );
      assert.ok(lines[1]?.startsWith(`${usd.id},created,${p},Csv =cmd,,,USD,conv_`), lines[1]);
      assert.ok(lines[1]?.endsWith(`,"order,""1""",${usdApprovedAt(lines[1])},10.50,1050`), lines[1]);
    });

    it("answers 404 for another brand's payout and never pays another brand's conversions", async () => {
      const other = await env.createBrand('Other Brand');
      const mine = await partner('Mine');
      await conversion(mine, { payoutCents: 100 });
      env.clock.advance(MINUTE);
      const run = await env.http('POST', '/api/v1/payouts', { body: { upTo: now(), partnerId: mine } });
      const id = run.body.data[0].id;
      for (const [method, path] of [
        ['GET', `/api/v1/payouts/${id}`],
        ['POST', `/api/v1/payouts/${id}/mark-paid`],
        ['POST', `/api/v1/payouts/${id}/cancel`],
        ['GET', `/api/v1/partners/${mine}/balances`],
      ] as const) {
        expectError(await env.http(method, path, { key: other.apiKey }), 404, 'not_found');
      }
      expectError(
        await env.http('POST', '/api/v1/payouts', { key: other.apiKey, body: { upTo: now(), partnerId: mine } }),
        422,
        'validation_error',
      );
      const theirs = await env.http('POST', '/api/v1/payouts', { key: other.apiKey, body: { upTo: now() } });
      assert.equal(theirs.status, 201);
      assert.deepEqual(theirs.body.data, []);
      assert.equal((await env.http('GET', '/api/v1/payouts', { key: other.apiKey })).body.data.length, 0);
      assert.equal((await env.http('GET', `/api/v1/payouts/${id}`)).body.status, 'created');
    });

    it('creates a run once when the same request arrives many times in parallel', async () => {
      const p = await partner('Parallel same');
      for (let i = 0; i < 5; i++) await conversion(p, { payoutCents: 100 + i });
      env.clock.advance(MINUTE);
      const body = { upTo: now(), partnerId: p };
      const responses = await Promise.all(
        Array.from({ length: 12 }, () => env.http('POST', '/api/v1/payouts', { body })),
      );
      assert.deepEqual(
        responses.map((r) => r.status).sort(),
        [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
      );
      const ids = new Set(responses.map((r) => JSON.stringify(r.body.data.map((x: { id: string }) => x.id))));
      assert.equal(ids.size, 1);
      assert.equal(responses[0]?.body.data[0].amountCents, 510);
    });

    it('never puts a conversion in two payouts when different runs race', async () => {
      const partners = [await partner('Race 1'), await partner('Race 2'), await partner('Race 3')];
      const conversions: string[] = [];
      for (const p of partners) {
        for (let i = 0; i < 4; i++) conversions.push((await conversion(p, { payoutCents: 10 })).id);
        env.clock.advance(1000);
      }
      env.clock.advance(MINUTE);
      const requests = [];
      for (let i = 0; i < 4; i++) {
        requests.push({ upTo: new Date(env.clock.now() - i * 1000).toISOString() });
        for (const p of partners)
          requests.push({ upTo: new Date(env.clock.now() - i * 500).toISOString(), partnerId: p });
      }
      const responses = await Promise.all(requests.map((body) => env.http('POST', '/api/v1/payouts', { body })));
      for (const r of responses) assert.ok(r.status === 201 || r.status === 200, `${r.status} ${r.text}`);
      const items = await env.ctx.db.read
        .selectFrom('payout_items')
        .innerJoin('payouts', 'payouts.id', 'payout_items.payout_id')
        .select(['payout_items.conversion_id', 'payouts.amount_cents', 'payouts.id'])
        .where('payout_items.conversion_id', 'in', conversions)
        .execute();
      assert.equal(items.length, conversions.length, 'every conversion is in exactly one payout');
      assert.equal(new Set(items.map((i) => i.conversion_id)).size, conversions.length);
      const payoutIds = [...new Set(responses.flatMap((r) => r.body.data.map((x: { id: string }) => x.id)))];
      const rows = await env.ctx.db.read
        .selectFrom('payouts')
        .select(['amount_cents', 'conversion_count'])
        .where('id', 'in', payoutIds)
        .where('partner_id', 'in', partners)
        .execute();
      assert.equal(
        rows.reduce((sum, r) => sum + r.amount_cents, 0),
        conversions.length * 10,
      );
    });
  });
}

/** The approved_at cell of a CSV line (the third from the end). */
function usdApprovedAt(line: string | undefined): string {
  const cells = (line ?? '').split(',');
  return cells[cells.length - 3] ?? '';
}
