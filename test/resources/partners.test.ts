import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Envelope {
  id: string;
  event: string;
  createdAt: string;
  brandId: string;
  data: Record<string, unknown>;
}

/** Every stored event of `type` about `partnerId`, oldest first. */
async function partnerEvents(env: TestEnv, type: string, partnerId: string): Promise<Envelope[]> {
  const rows = await env.ctx.db.read.selectFrom('events').selectAll().where('type', '=', type).orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.payload) as Envelope).filter((e) => e.data.partnerId === partnerId);
}

/** Asserts the envelope fields of the spec and returns the event's data. */
function checkEnvelope(event: Envelope | undefined, type: string, brandId: string, at: number) {
  assert.ok(event, `no ${type} event`);
  assert.deepEqual(Object.keys(event), ['id', 'event', 'createdAt', 'brandId', 'data']);
  assert.match(event.id, /^evt_[0-9A-Z]{26}$/);
  assert.equal(event.event, type);
  assert.match(event.createdAt, ISO_MS);
  assert.equal(event.createdAt, new Date(at).toISOString());
  assert.equal(event.brandId, brandId);
  return event.data;
}

const ALICE = { name: 'Alice Media', email: 'alice@media.example', website: 'https://alice.example' };

for (const dialect of testedDialects()) {
  describe(`partners (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    /** Applicants come from the public form, limited per IP: each one gets a fresh rate-limit window. */
    const freshApplyWindow = () => env.clock.advance(61_000);

    const apply = async (body: Record<string, unknown>) => {
      freshApplyWindow();
      return env.request('POST', '/api/public/partners/apply', { key: null, body });
    };
    const applicant = async (name = 'Applicant') => {
      const res = await apply({ brandSlug: env.brand.slug, name, email: 'applicant@example.com' });
      assert.equal(res.status, 201);
      return res.body.id as string;
    };
    const active = async (name = 'Direct') => {
      const res = await env.request('POST', '/api/v1/partners', { body: { name, email: 'direct@example.com' } });
      assert.equal(res.status, 201);
      return res.body.id as string;
    };

    describe('POST /api/v1/partners', () => {
      it('creates an active partner and fires partner.approved with its fields', async () => {
        const res = await env.request('POST', '/api/v1/partners', { body: ALICE });
        assert.equal(res.status, 201);
        assert.match(res.body.id, /^prt_[0-9A-Z]{26}$/);
        assert.equal(res.body.status, 'active');
        assert.equal(res.body.approvedAt, new Date(env.clock.now()).toISOString());
        assert.equal(res.body.bannedAt, null);
        const [event, ...more] = await partnerEvents(env, 'partner.approved', res.body.id);
        assert.equal(more.length, 0);
        const data = checkEnvelope(event, 'partner.approved', env.brand.id, env.clock.now());
        assert.deepEqual(data, { partnerId: res.body.id, ...ALICE, status: 'active', metadata: {} });
      });

      it('sends website as null in the event when none was given', async () => {
        const id = await active('No Site');
        const [event] = await partnerEvents(env, 'partner.approved', id);
        assert.deepEqual(event?.data, {
          partnerId: id,
          metadata: {},
          name: 'No Site',
          email: 'direct@example.com',
          website: null,
          status: 'active',
        });
      });

      it('answers 422 for a bad email or a non-http website', async () => {
        const res = await env.request('POST', '/api/v1/partners', {
          body: { name: 'X', email: 'not-an-email' },
        });
        assert.deepEqual(
          expectError(res, 422, 'validation_error').details?.map((d) => d.path),
          ['email'],
        );
        const site = await env.request('POST', '/api/v1/partners', {
          body: { name: 'X', email: 'x@example.com', website: 'javascript:alert(1)' },
        });
        assert.deepEqual(
          expectError(site, 422, 'validation_error').details?.map((d) => d.path),
          ['website'],
        );
      });
    });

    describe('POST /api/v1/partners/:id/approve', () => {
      it('moves an applicant to active and fires partner.approved', async () => {
        const id = await applicant('Becoming Active');
        env.clock.advance(1_000);
        const res = await env.request('POST', `/api/v1/partners/${id}/approve`);
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'active');
        assert.equal(res.body.approvedAt, new Date(env.clock.now()).toISOString());
        const events = await partnerEvents(env, 'partner.approved', id);
        assert.equal(events.length, 1);
        const data = checkEnvelope(events[0], 'partner.approved', env.brand.id, env.clock.now());
        assert.deepEqual(data, {
          partnerId: id,
          metadata: {},
          name: 'Becoming Active',
          email: 'applicant@example.com',
          website: null,
          status: 'active',
        });
      });

      it('answers 409 conflict for a partner that is already active, firing nothing', async () => {
        const id = await active();
        expectError(await env.request('POST', `/api/v1/partners/${id}/approve`), 409, 'conflict');
        assert.equal((await partnerEvents(env, 'partner.approved', id)).length, 1);
      });

      it('answers 409 conflict for a banned partner', async () => {
        const id = await applicant();
        assert.equal((await env.request('POST', `/api/v1/partners/${id}/ban`, { body: {} })).status, 200);
        expectError(await env.request('POST', `/api/v1/partners/${id}/approve`), 409, 'conflict');
      });
    });

    describe('POST /api/v1/partners/:id/ban', () => {
      it('bans an applicant and fires partner.banned with reason and bannedBy manual', async () => {
        const id = await applicant('Shady Applicant');
        const res = await env.request('POST', `/api/v1/partners/${id}/ban`, { body: { reason: 'fake traffic' } });
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'banned');
        assert.equal(res.body.banReason, 'fake traffic');
        assert.equal(res.body.bannedAt, new Date(env.clock.now()).toISOString());
        const events = await partnerEvents(env, 'partner.banned', id);
        assert.equal(events.length, 1);
        const data = checkEnvelope(events[0], 'partner.banned', env.brand.id, env.clock.now());
        assert.deepEqual(data, {
          partnerId: id,
          metadata: {},
          name: 'Shady Applicant',
          email: 'applicant@example.com',
          website: null,
          status: 'banned',
          reason: 'fake traffic',
          bannedBy: 'manual',
        });
      });

      it('bans an active partner and fires partner.banned', async () => {
        const id = await active('Gone Rogue');
        const res = await env.request('POST', `/api/v1/partners/${id}/ban`, { body: { reason: 'cookie stuffing' } });
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'banned');
        const [event] = await partnerEvents(env, 'partner.banned', id);
        const data = checkEnvelope(event, 'partner.banned', env.brand.id, env.clock.now());
        assert.equal(data.status, 'banned');
        assert.equal(data.reason, 'cookie stuffing');
        assert.equal(data.bannedBy, 'manual');
      });

      it('sends reason null when the ban gives none', async () => {
        const id = await active();
        assert.equal((await env.request('POST', `/api/v1/partners/${id}/ban`, { body: {} })).status, 200);
        const [event] = await partnerEvents(env, 'partner.banned', id);
        assert.equal(event?.data.reason, null);
        assert.equal((await env.request('GET', `/api/v1/partners/${id}`)).body.banReason, null);
      });

      it('accepts a ban sent with a JSON content type and an empty body', async () => {
        const id = await active();
        const res = await env.app.inject({
          method: 'POST',
          url: `/api/v1/partners/${id}/ban`,
          headers: { authorization: `Bearer ${env.brand.apiKey}`, 'content-type': 'application/json' },
          payload: '',
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().status, 'banned');
      });

      it('answers 409 conflict for a partner that is already banned, firing nothing more', async () => {
        const id = await active();
        await env.request('POST', `/api/v1/partners/${id}/ban`, { body: { reason: 'first' } });
        const again = await env.request('POST', `/api/v1/partners/${id}/ban`, { body: { reason: 'second' } });
        expectError(again, 409, 'conflict');
        assert.equal((await partnerEvents(env, 'partner.banned', id)).length, 1);
        assert.equal((await env.request('GET', `/api/v1/partners/${id}`)).body.banReason, 'first');
      });
    });

    describe('GET /api/v1/partners', () => {
      it('filters by status', async () => {
        const other = await env.createBrand('Status Filter');
        const create = (name: string) =>
          env.request('POST', '/api/v1/partners', { key: other.apiKey, body: { name, email: 'p@example.com' } });
        const kept = (await create('Kept')).body.id;
        const banned = (await create('Banned')).body.id;
        await env.request('POST', `/api/v1/partners/${banned}/ban`, { key: other.apiKey, body: {} });
        freshApplyWindow();
        const applied = await env.request('POST', '/api/public/partners/apply', {
          key: null,
          body: { brandSlug: other.slug, name: 'Hopeful', email: 'h@example.com' },
        });
        const ids = async (status: string) =>
          (await env.request('GET', `/api/v1/partners?status=${status}`, { key: other.apiKey })).body.data.map(
            (p: { id: string }) => p.id,
          );
        assert.deepEqual(await ids('active'), [kept]);
        assert.deepEqual(await ids('banned'), [banned]);
        assert.deepEqual(await ids('applicant'), [applied.body.id]);
      });

      it("answers 404 for another brand's partner", async () => {
        const other = await env.createBrand('Partner Rival');
        const theirs = await env.request('POST', '/api/v1/partners', {
          key: other.apiKey,
          body: { name: 'Theirs', email: 't@example.com' },
        });
        expectError(await env.request('GET', `/api/v1/partners/${theirs.body.id}`), 404, 'not_found');
        expectError(await env.request('POST', `/api/v1/partners/${theirs.body.id}/approve`), 404, 'not_found');
        expectError(
          await env.request('POST', `/api/v1/partners/${theirs.body.id}/ban`, { body: {} }),
          404,
          'not_found',
        );
        const stored = await env.request('GET', `/api/v1/partners/${theirs.body.id}`, { key: other.apiKey });
        assert.equal(stored.body.status, 'active');
      });
    });
  });
}
