import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allPages } from '../../src/modules/analytics/csv.js';
import { clickToApi, listClicks } from '../../src/modules/clicks/repository.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

/** Splits CSV text into rows of cells (enough for what these exports contain). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}

for (const dialect of testedDialects()) {
  describe(`CSV exports (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    let otherOfferId: string;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect);
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      const offer = async () =>
        (
          await env.request('POST', '/api/v1/offers', {
            body: { name: 'O', destinationUrl: 'https://shop.example/', revenueCents: 1250, payoutCents: 300 },
          })
        ).body.id as string;
      offerId = await offer();
      otherOfferId = await offer();
      partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } })).body
        .id;
      for (const [id, sub1] of [
        [offerId, '=HYPERLINK("x")'],
        [offerId, 'plain'],
        [offerId, 'with,comma'],
        [otherOfferId, 'other'],
      ] as const) {
        const res = await env.app.inject({
          method: 'GET',
          url: `/t/${id}/${partnerId}?sub1=${encodeURIComponent(sub1)}`,
          headers: { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0 Safari/537.36' },
        });
        assert.equal(res.statusCode, 302);
      }
    });
    after(() => env.close());

    it('exports the filtered click list with ?format=csv: a header row and every click, formulas defused', async () => {
      // limit is refused with CSV (README "CSV exports"): an export streams every matching row.
      const limited = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&format=csv&limit=1`);
      assert.equal(limited.status, 422);
      const res = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&format=csv`);
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'] as string, /^text\/csv/);
      assert.match(res.headers['content-disposition'] as string, /attachment; filename="clicks.csv"/);
      const [header, ...rows] = parseCsv(res.body as string);
      assert.deepEqual(header?.slice(0, 4), ['id', 'offerId', 'partnerId', 'ip']);
      assert.ok(header?.includes('country') && header.includes('deviceType'));
      assert.equal(rows.length, 3, 'every matching click; the other offer is filtered out');
      const sub1 = header?.indexOf('sub1') as number;
      assert.deepEqual(rows.map((r) => r[sub1]).sort(), ['\'=HYPERLINK("x")', 'plain', 'with,comma']);
      const device = header?.indexOf('deviceType') as number;
      assert.deepEqual(
        rows.map((r) => r[device]),
        ['desktop', 'desktop', 'desktop'],
      );
    });

    it('exports conversions when the client sends Accept: text/csv', async () => {
      const [click] = (await env.request('GET', `/api/v1/clicks?offerId=${otherOfferId}`)).body.data;
      const metadata = { crm_id: '8841', note: 'a, "quoted" note' };
      const created = await env.request('POST', '/api/v1/conversions', { body: { clickId: click.id, metadata } });
      assert.equal(created.status, 201);
      const res = await env.request('GET', '/api/v1/conversions', { headers: { accept: 'text/csv' } });
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'] as string, /^text\/csv/);
      const [header, ...rows] = parseCsv(res.body as string);
      assert.equal(rows.length, 1);
      const row = Object.fromEntries(header?.map((h, i) => [h, rows[0]?.[i]]) ?? []);
      assert.equal(row.clickId, click.id);
      assert.equal(row.revenueCents, '1250');
      assert.equal(row.currency, 'USD');
      assert.equal(row.sub1, 'other');
      assert.equal(row.deviceType, 'desktop');
      assert.deepEqual(JSON.parse(row.metadata ?? ''), metadata, 'metadata as its JSON, not [object Object]');
    });

    it('exports a report with its grouping keys, currency and metrics as columns', async () => {
      const res = await env.request(
        'GET',
        '/api/v1/reports?from=2026-11-21&to=2026-11-21&groupBy=offer,sub1&format=csv',
      );
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'] as string, /^text\/csv/);
      const [header, ...rows] = parseCsv(res.body as string);
      assert.deepEqual(header, [
        'offerId',
        'sub1',
        'currency',
        'clicks',
        'conversions',
        'approved',
        'pending',
        'rejected',
        'revenueCents',
        'payoutCents',
        'profitCents',
        'conversionRate',
        'epcCents',
      ]);
      assert.deepEqual(rows.find((r) => r[1] === 'other')?.slice(0, 5), [otherOfferId, 'other', 'USD', '1', '1']);
      assert.equal(rows.length, 4);
    });

    it('still answers JSON for ?format=json, whatever Accept says', async () => {
      const res = await env.request('GET', '/api/v1/clicks?format=json', { headers: { accept: 'text/csv' } });
      assert.equal(res.status, 200);
      assert.ok(Array.isArray(res.body.data));
    });

    it('pages through a list a page at a time while exporting it', async () => {
      const page = (cursor: string | undefined, limit: number) =>
        listClicks(env.ctx.db.read, env.brand.id, { cursor, limit });
      const exported = [];
      for await (const click of allPages(page, clickToApi, undefined, 2)) exported.push(click.id);
      const listed = (await env.request('GET', '/api/v1/clicks?limit=100')).body.data.map((c: { id: string }) => c.id);
      assert.equal(listed.length, 4);
      assert.deepEqual(exported, listed);
    });
  });
}
