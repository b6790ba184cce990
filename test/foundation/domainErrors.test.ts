/**
 * Services speak the domain (not found, conflict, invalid) and know nothing of HTTP; the
 * error handler alone turns each into the API's status, code and message.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConflictError, InvalidError, NotFoundError } from '../../src/errors.js';
import { ApiError, toApiError } from '../../src/http/errors.js';
import { approvePartner, createPartner } from '../../src/modules/partners/service.js';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

describe('domain errors at the HTTP edge', () => {
  it('maps not found to 404 not_found, naming the thing', () => {
    const error = toApiError(new NotFoundError('Partner'));
    assert.deepEqual([error.status, error.code, error.message], [404, 'not_found', 'Partner not found.']);
  });

  it('maps a client that hung up mid-body to 400, not to a storage outage', () => {
    const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 });
    assert.deepEqual([toApiError(aborted).status, toApiError(aborted).code], [400, 'bad_request']);
    // The same code from the database driver (no HTTP status) is an outage: 503.
    const dropped = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    assert.deepEqual([toApiError(dropped).status, toApiError(dropped).code], [503, 'service_unavailable']);
  });

  it('maps PostgreSQL refusing connections to 503, whatever the reason it gives', () => {
    // Too many connections, the role refused, the database renamed or closed to connections
    // (ALLOW_CONNECTIONS false), an admin shutdown, a connection failure: pg's own codes.
    for (const code of ['53300', '28P01', '28000', '3D000', '55000', '57P01', '57P03', '08006']) {
      const refused = Object.assign(new Error(`refused (${code})`), { code, severity: 'FATAL' });
      assert.deepEqual([toApiError(refused).status, toApiError(refused).code], [503, 'service_unavailable'], code);
    }
    // A statement the database refuses is not an outage.
    const wrong = Object.assign(new Error('division by zero'), { code: '22012' });
    assert.equal(toApiError(wrong).status, 500);
  });

  it("maps a conflict to 409 conflict with the service's words", () => {
    const error = toApiError(new ConflictError('This partner is already banned.'));
    assert.deepEqual([error.status, error.code, error.message], [409, 'conflict', 'This partner is already banned.']);
  });

  it('maps invalid input to 422 validation_error listing every problem, as schema errors do', () => {
    const problems = [
      { path: 'currency', message: 'must be an ISO 4217 currency code such as USD' },
      { path: '', message: 'a blocklist holds at most 1000 entries' },
    ];
    const error = toApiError(new InvalidError(problems));
    assert.deepEqual([error.status, error.code], [422, 'validation_error']);
    assert.deepEqual(error.details, problems);
    assert.equal(error.message, ApiError.validation(problems).message);
    assert.equal(
      error.message,
      'Validation failed: currency: must be an ISO 4217 currency code such as USD; a blocklist holds at most 1000 entries.',
    );
  });
});

for (const dialect of testedDialects()) {
  describe(`services raise domain errors, the API answers them (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    it('a missing partner is a NotFoundError in the service and 404 over HTTP', async () => {
      await assert.rejects(approvePartner(env.ctx, env.brand.id, 'prt_missing'), (error: unknown) => {
        assert.ok(error instanceof NotFoundError, `got ${String(error)}`);
        assert.ok(!(error instanceof ApiError), 'nothing HTTP-shaped leaves the service');
        return true;
      });
      expectError(await env.request('POST', '/api/v1/partners/prt_missing/approve'), 404, 'not_found');
    });

    it('a disallowed move is a ConflictError in the service and 409 over HTTP', async () => {
      const partner = await createPartner(env.ctx, env.brand.id, { name: 'Active', email: 'active@example.com' });
      await assert.rejects(approvePartner(env.ctx, env.brand.id, partner.id), ConflictError);
      const res = await env.request('POST', `/api/v1/partners/${partner.id}/approve`);
      assert.equal(
        expectError(res, 409, 'conflict').message,
        'Only applicants can be approved; this partner is active.',
      );
    });
  });
}
