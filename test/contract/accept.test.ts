import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { acceptsCsvOverJson } from '../../src/http/accept.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { listen, type WireClient } from './http.js';

describe('Accept: CSV only where the client prefers it to JSON', () => {
  it('reads q-values: q=0 refuses CSV, a heavier or earlier JSON wins', () => {
    for (const [accept, csv] of [
      ['text/csv', true],
      ['text/csv; charset=utf-8', true],
      ['TEXT/CSV', true],
      ['text/csv, application/json', true],
      ['application/json;q=0.5, text/csv', true],
      ['text/csv;q=0.9, */*;q=0.1', true],
      ['text/csv;q=0', false],
      ['text/csv; q=0.000', false],
      ['text/csv;q=0.5, application/json', false],
      ['application/json, text/csv', false],
      ['application/*, text/csv', false],
      ['*/*', false],
      ['text/*', false],
      ['text/csvx', false],
      ['', false],
      [undefined, false],
    ] as const) {
      assert.equal(acceptsCsvOverJson(accept), csv, String(accept));
    }
  });
});

for (const dialect of testedDialects()) {
  describe(`Accept negotiation over HTTP (${dialect})`, () => {
    let env: TestEnv;
    let http: WireClient;
    before(async () => {
      env = await createTestEnv(dialect);
      http = await listen(env);
    });
    after(() => env.close());

    it('answers JSON to a header that weighs CSV at 0 or below JSON, CSV to one that prefers it', async () => {
      for (const path of ['/api/v1/conversions', '/api/v1/clicks', '/api/v1/reports?groupBy=day']) {
        for (const [accept, type] of [
          ['text/csv;q=0', 'application/json'],
          ['text/csv;q=0.5, application/json', 'application/json'],
          ['application/json, text/csv', 'application/json'],
          ['text/csv', 'text/csv'],
          ['application/json;q=0.1, text/csv', 'text/csv'],
        ] as const) {
          const res = await http.call('GET', path, { headers: { accept } });
          assert.equal(res.status, 200, `${path} ${accept}: ${JSON.stringify(res.body)}`);
          assert.equal(res.headers.get('content-type')?.split(';')[0], type, `${path} with Accept: ${accept}`);
        }
      }
    });
  });
}
