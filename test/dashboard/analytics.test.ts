import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { type DashboardClient, signedInClient } from './client.js';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';

for (const dialect of testedDialects()) {
  describe(`dashboard analytics (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      client = await signedInClient(env);
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      for (const currency of ['EUR', 'USD']) {
        const offerId = (
          await env.request('POST', '/api/v1/offers', {
            body: {
              name: currency,
              destinationUrl: 'https://o.example/',
              currency,
              revenueCents: 1000,
              payoutCents: 100,
            },
          })
        ).body.id;
        const res = await env.app.inject({
          method: 'GET',
          url: `/t/${offerId}/${partnerId}`,
          headers: { 'user-agent': CHROME, 'x-forwarded-for': '81.2.69.142' },
        });
        assert.equal(res.statusCode, 302);
        await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      }
    });
    after(() => env.close());

    it('builds a report by the dimensions picked, with a chart of the top rows and rows per currency', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&d2=deviceType&d3=');
      assert.equal(page.status, 200);
      assert.match(page.body, /id="analytics-chart-title"/);
      assert.match(page.body, /<th scope="row"[^>]*>GB<\/th><th scope="row"[^>]*>desktop<\/th><td[^>]*>EUR<\/td>/);
      assert.match(page.body, /<th scope="row"[^>]*>GB<\/th><th scope="row"[^>]*>desktop<\/th><td[^>]*>USD<\/td>/);
      assert.match(page.body, /href="\/dashboard\/analytics"/);
    });

    it('exports the report built as CSV, with the columns of the API, and sends a refused query back to the builder', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&d2=deviceType&d3=');
      const href = /href="(\/dashboard\/analytics\/export\.csv\?[^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(href, 'the page links its CSV');
      const csv = await client.get(href);
      assert.equal(csv.status, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const [header, ...rows] = csv.body.trim().split(/\r?\n/);
      assert.match(header ?? '', /country/);
      assert.match(header ?? '', /deviceType/);
      // The clicks (GB, desktop) and the conversions recorded without a click, per currency.
      assert.equal(rows.filter((r) => r.includes('GB') && r.includes('desktop')).length, 2, rows.join('\n'));
      const refused = await client.get('/dashboard/analytics/export.csv?from=2026-11-30&to=2026-11-01&d1=day');
      assert.equal(refused.status, 303);
      assert.match(refused.location ?? '', /^\/dashboard\/analytics\?/);
    });

    it('names offers and partners in the table and the chart, as the reports do; the CSV keeps their ids', async () => {
      const partnerId = (
        await env.request('POST', '/api/v1/partners', { body: { name: 'Jane & Co Media', email: 'jane@example.com' } })
      ).body.id;
      const offerId = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'Summer Sale', destinationUrl: 'https://o.example/', currency: 'EUR' },
        })
      ).body.id;
      const click = await env.app.inject({
        method: 'GET',
        url: `/t/${offerId}/${partnerId}`,
        headers: { 'user-agent': CHROME, 'x-forwarded-for': '81.2.69.142' },
      });
      assert.equal(click.statusCode, 302);
      const query = 'from=2026-11-21&to=2026-11-21&d1=partner&d2=offer&d3=';
      const page = await client.get(`/dashboard/analytics?${query}`);
      assert.equal(page.status, 200);
      assert.match(
        page.body,
        /<th scope="row"[^>]*>Jane &amp; Co Media<\/th><th scope="row"[^>]*>Summer Sale<\/th><td[^>]*>EUR<\/td>/,
      );
      const chart = /<figure[\s\S]*?<\/figure>/.exec(page.body)?.[0] ?? '';
      assert.match(chart, /Jane &amp; Co Media · Summer Sale · EUR/, 'the chart names them too');
      // The filter menus carry the ids as their values; nothing shown is a raw id.
      const shown = page.body.replace(/<option value="[^"]*"/g, '<option');
      assert.doesNotMatch(shown, new RegExp(`${partnerId}|${offerId}`), 'no raw id on the page');
      const csv = await client.get(`/dashboard/analytics/export.csv?${query}`);
      const row = csv.body.split(/\r?\n/).find((line) => line.includes(partnerId)) ?? '';
      assert.match(row, new RegExp(`${partnerId},${offerId}|${offerId},${partnerId}`), 'the CSV keeps the ids');
    });

    it('filters by an offer and a partner picked from menus, and takes them from the address', async () => {
      const offers = (await env.request('GET', '/api/v1/offers')).body.data as Array<{ id: string; name: string }>;
      const eur = offers.find((o) => o.name === 'EUR')!;
      const page = await client.get(`/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&offerId=${eur.id}`);
      assert.equal(page.status, 200);
      assert.match(page.body, /<label for="f-offerId">Offer<\/label><select id="f-offerId" name="offerId">/);
      assert.match(page.body, new RegExp(`<option value="${eur.id}" selected>EUR</option>`));
      assert.match(page.body, /<label for="f-partnerId">Partner<\/label>/);
      // Only the EUR offer's rows: its click (GB) and its conversion, no USD row.
      assert.match(page.body, /<td[^>]*>EUR<\/td>/);
      assert.doesNotMatch(page.body, /<td[^>]*>USD<\/td>/);
      const other = await client.get(
        '/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&partnerId=prt_none',
      );
      assert.equal(other.status, 200);
      assert.match(other.body, /No activity in this range/);
    });

    it('filters by a dimension value', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&country=DE');
      assert.equal(page.status, 200);
      assert.match(page.body, /No activity in this range/);
    });

    it('shows the report service’s complaint for a bad range (422) in the builder, keeping its choices', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-30&to=2026-11-01&d1=day&browser=Chrome');
      assert.equal(page.status, 422);
      assert.match(page.body, /From: must not be after to/);
      assert.match(page.body, /<select id="d1" name="d1">/, 'the builder is still there');
      assert.match(page.body, /name="browser" value="Chrome"/, 'with the filters typed');
    });

    it('refuses a country code no click is stored with (UK) in the builder, where it showed no activity', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&country=uk');
      assert.equal(page.status, 422);
      assert.match(
        page.body,
        /Country: must be an ISO 3166-1 alpha-2 country code such as DE \(any case\); the United Kingdom is GB/,
      );
      assert.doesNotMatch(page.body, /No activity in this range/);
      assert.match(page.body, /name="country" value="uk"/, 'the value typed is kept');
      const csv = await client.get(
        '/dashboard/analytics/export.csv?from=2026-11-21&to=2026-11-21&d1=country&country=uk',
      );
      assert.equal(csv.status, 303, 'the CSV of a refused filter goes back to the builder');
    });

    it('names every problem of the builder’s choices at once: dimensions, range and filters', async () => {
      const page = await client.get(
        '/dashboard/analytics?from=2026-11-30&to=2026-11-01&d1=day&d2=week&country=uk&deviceType=phone',
      );
      assert.equal(page.status, 422);
      const alert = /<div class="flash error"[^>]*>([^<]*)</.exec(page.body)?.[1] ?? '';
      for (const problem of [
        'Dimensions: use at most one of day, week, month',
        'From: must not be after to',
        'Country: must be an ISO 3166-1 alpha-2 country code',
        'Device: must be one of',
      ]) {
        assert.ok(alert.includes(problem), `${problem} in ${alert}`);
      }
    });

    it('names an impossible combination of dimensions in its own words, keeping the builder', async () => {
      const page = await client.get('/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=day&d2=week&os=Windows');
      assert.equal(page.status, 422);
      assert.match(page.body, /Dimensions: use at most one of day, week, month/);
      assert.doesNotMatch(page.body, /query\.groupBy/);
      assert.match(page.body, /<option value="week" selected/);
      assert.match(page.body, /name="os" value="Windows"/);
    });

    it('matches country and device filters typed in another case', async () => {
      const page = await client.get(
        '/dashboard/analytics?from=2026-11-21&to=2026-11-21&d1=country&country=gb&deviceType=Desktop',
      );
      assert.equal(page.status, 200);
      assert.match(page.body, /<th scope="row"[^>]*>GB<\/th>/);
    });

    it('shows the overview’s totals per currency, never added together, with a trend chart for each', async () => {
      const page = await client.get('/dashboard');
      assert.equal(page.status, 200);
      assert.match(page.body, /Last 30 days in EUR/);
      assert.match(page.body, /Last 30 days in USD/);
      assert.match(page.body, /Revenue and payout per day \(EUR\)/);
      assert.match(page.body, /Revenue and payout per day \(USD\)/);
    });

    it('charts a report of two currencies once per currency, and names each row’s currency', async () => {
      const page = await client.get('/dashboard/reports?from=2026-11-21&to=2026-11-21&time=day');
      assert.equal(page.status, 200);
      assert.match(page.body, /Revenue and payout per day \(EUR\)/);
      assert.match(page.body, /Revenue and payout per day \(USD\)/);
      assert.match(page.body, /<th scope="col"[^>]*>Currency<\/th>/);
      assert.match(page.body, /data-label="Currency"[^>]*>EUR</);
    });

    it('rounds EPC once, from payout and clicks: 50 ¢ over 101 clicks (0.495 ¢) shows €0.00 in both tables', async () => {
      // A day of its own, so no other test's traffic is in these rows.
      env.clock.set(Date.parse('2026-11-15T10:00:00Z'));
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      const offerId = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'Half Cent', destinationUrl: 'https://o.example/', currency: 'EUR', payoutCents: 50 },
        })
      ).body.id;
      for (let i = 0; i < 101; i++) {
        const click = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}` });
        assert.equal(click.statusCode, 302);
      }
      await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      const report = await env.request('GET', `/api/v1/reports?from=2026-11-15&to=2026-11-15&offerId=${offerId}`);
      assert.deepEqual([report.body.totals.clicks, report.body.totals.epcCents], [101, 0.5]);
      const rowOf = (html: string) =>
        html
          .slice(html.indexOf('<tbody'))
          .split('<tr')
          .find((row) => row.includes('Half Cent')) ?? '';
      const analytics = await client.get('/dashboard/analytics?from=2026-11-15&to=2026-11-15&d1=offer');
      assert.match(rowOf(analytics.body), /data-label="EPC"[^>]*>€0\.00</);
      const reports = await client.get('/dashboard/reports?from=2026-11-15&to=2026-11-15&time=&by=offer');
      assert.match(rowOf(reports.body), /data-label="EPC"[^>]*>€0\.00</);
    });

    it('matches filters as typed, spaces included, alike by the rollups and the facts; an empty field is no filter', async () => {
      // A day of its own: clicks with a sub1 of spaces, of one space, plain, and two without.
      env.clock.set(Date.parse('2026-11-14T10:00:00Z'));
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      const offerId = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'Subs', destinationUrl: 'https://o.example/', currency: 'EUR' },
        })
      ).body.id;
      for (const sub1 of [' spaced ', ' ', 'x', null, null]) {
        const query = sub1 === null ? '' : `?sub1=${encodeURIComponent(sub1)}`;
        const click = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}${query}` });
        assert.equal(click.statusCode, 302);
      }
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      const range = 'from=2026-11-14&to=2026-11-14';
      const csvClicks = async (query: string) => {
        const csv = await client.get(`/dashboard/analytics/export.csv?${range}&${query}`);
        assert.equal(csv.status, 200, query);
        const [header = '', ...rows] = csv.body.trim().split(/\r?\n/);
        const at = header.split(',').indexOf('clicks');
        return rows.reduce((sum, row) => sum + Number(row.split(',')[at]), 0);
      };
      for (const sub1 of [' spaced ', ' ', 'x']) {
        const value = encodeURIComponent(sub1);
        const api = await env.request('GET', `/api/v1/reports?${range}&groupBy=sub1&sub1=${value}`);
        assert.equal(api.body.totals.clicks, 1, `the API for ${JSON.stringify(sub1)}`);
        // sub1 alone reads the rollups, sub1 with country the facts.
        for (const dimensions of ['d1=sub1', 'd1=sub1&d2=country']) {
          assert.equal(await csvClicks(`${dimensions}&sub1=${value}`), 1, `${dimensions} for ${JSON.stringify(sub1)}`);
        }
      }
      assert.equal(await csvClicks('d1=sub1&sub1='), 5, 'an empty field filters nothing');
      const page = await client.get(`/dashboard/analytics?${range}&d1=sub1&sub1=%20spaced%20`);
      assert.equal(page.status, 200);
      assert.match(page.body, /name="sub1" value=" spaced "/, 'the value is kept as typed');
      assert.match(page.body, /<th scope="row"[^>]*> spaced <\/th>/);
      assert.doesNotMatch(page.body, /No activity in this range/);
    });

    it('pages a long table as the Reports page does, 100 rows a page, saying which rows of how many it shows', async () => {
      // A day of its own with 260 sub1 values: 260 rows grouped by sub1.
      env.clock.set(Date.parse('2026-11-12T10:00:00Z'));
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      const offerId = (
        await env.request('POST', '/api/v1/offers', { body: { name: 'Many', destinationUrl: 'https://o.example/' } })
      ).body.id;
      for (let i = 1; i <= 260; i++) {
        const sub1 = `many-${String(i).padStart(3, '0')}`;
        const click = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}?sub1=${sub1}` });
        assert.equal(click.statusCode, 302);
      }
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      const api = await env.request('GET', '/api/v1/reports?from=2026-11-12&to=2026-11-12&groupBy=sub1');
      assert.equal(api.body.data.length, 260);
      const seen = new Set<string>();
      const pages: Array<{ rows: number; pager: string }> = [];
      let url: string | undefined = '/dashboard/analytics?from=2026-11-12&to=2026-11-12&d1=sub1';
      while (url && pages.length < 5) {
        const page = await client.get(url);
        assert.equal(page.status, 200, url);
        const table = page.body.slice(page.body.indexOf('<tbody'), page.body.indexOf('</tbody>'));
        const rows = [...table.matchAll(/<th scope="row"[^>]*>(many-\d+)<\/th>/g)].map((m) => m[1] as string);
        for (const row of rows) seen.add(row);
        const pager = /<nav class="pager"[\s\S]*?<\/nav>/.exec(page.body)?.[0] ?? '';
        pages.push({
          rows: rows.length,
          pager: pager
            .replace(/<[^>]+>/g, ' ')
            .replace(/\s+/g, ' ')
            .trim(),
        });
        url = /<a href="([^"]+)" rel="next">/.exec(pager)?.[1]?.replaceAll('&amp;', '&');
      }
      assert.deepEqual(pages, [
        { rows: 100, pager: 'Rows 1–100 of 260 Next page »' },
        { rows: 100, pager: '‹ Previous page Rows 101–200 of 260 Next page »' },
        { rows: 60, pager: '« First page ‹ Previous page Rows 201–260 of 260 Last page' },
      ]);
      assert.equal(seen.size, 260, 'every row on exactly one page');
      const past = await client.get('/dashboard/analytics?from=2026-11-12&to=2026-11-12&d1=sub1&offset=1000');
      assert.match(past.body, /No rows on this page/);
      assert.doesNotMatch(past.body, /No activity in this range/);
    });
  });
}

const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
/** Addresses the country data places in Great Britain, the United States and Ireland. */
const GB = '81.2.69.142';
const US = '8.8.8.8';
const IE = '2a00:1450:4001::1';

/** The text of the element with `id`'s enclosing section (tags dropped, spaces collapsed). */
function sectionText(html: string, headingId: string): string {
  const start = html.indexOf(`aria-labelledby="${headingId}"`);
  assert.ok(start >= 0, `a section labelled by ${headingId}`);
  const end = html.indexOf('</section>', html.indexOf('</table>', start));
  return html
    .slice(start, end)
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ');
}

for (const dialect of testedDialects()) {
  describe(`dashboard: where clicks come from (${dialect})`, () => {
    let env: TestEnv;
    let client: DashboardClient;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
      // New York: the overview's 30 days are 2026-10-23…2026-11-21 there, 05:00 UTC to 05:00 UTC.
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      const brand = await env.request('PATCH', '/api/v1/brand', { body: { timezone: 'America/New_York' } });
      assert.equal(brand.status, 200);
      client = await signedInClient(env);
      const partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } }))
        .body.id;
      const offerId = (
        await env.request('POST', '/api/v1/offers', { body: { name: 'O', destinationUrl: 'https://o.example/' } })
      ).body.id;
      const click = async (at: string, headers: Record<string, string>) => {
        env.clock.set(Date.parse(at));
        const res = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}`, headers });
        assert.equal(res.statusCode, 302);
      };
      // 22 Oct, 23:00 in New York (23 Oct in UTC): the day before the range, so not counted.
      await click('2026-10-23T03:00:00Z', { 'user-agent': CHROME, 'x-forwarded-for': IE });
      // 23 Oct, 00:30 in New York: the range's first day.
      await click('2026-10-23T04:30:00Z', {
        'user-agent': IPHONE,
        'x-forwarded-for': US,
        referer: 'https://Blog.Example.org/post',
      });
      await click('2026-11-21T09:00:00Z', { 'user-agent': CHROME, 'x-forwarded-for': GB });
      await click('2026-11-21T09:30:00Z', { 'user-agent': CHROME, 'x-forwarded-for': GB });
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
    });
    after(() => env.close());

    it('shows the top countries of the last 30 brand-local days on the overview, with their share of clicks', async () => {
      const page = await client.get('/dashboard');
      assert.equal(page.status, 200);
      const text = sectionText(page.body, 'countries-h');
      assert.match(text, /United Kingdom \(GB\) 2 66\.7% 0 United States \(US\) 1 33\.3% 0/);
      assert.doesNotMatch(text, /Ireland/, 'the click of the day before the range is not counted');
    });

    it('shows the device types of the last 30 days on the overview', async () => {
      const text = sectionText((await client.get('/dashboard')).body, 'devices-h');
      assert.match(text, /desktop 2 66\.7% 0 mobile 1 33\.3% 0/);
    });

    it('lists each click with its country, device, OS, browser and referrer host', async () => {
      const page = await client.get('/dashboard/clicks');
      assert.equal(page.status, 200);
      const iphoneRow = page.body.split('<tr').find((row) => row.includes('United States (US)'));
      assert.ok(iphoneRow, 'a row for the click from the United States');
      assert.match(iphoneRow, /data-label="Device">mobile · iOS · Mobile Safari</);
      assert.match(iphoneRow, /data-label="Referrer">blog\.example\.org</);
      const ireland = page.body.split('<tr').find((row) => row.includes('Ireland (IE)'));
      assert.ok(ireland, 'a row for the click from Ireland');
      assert.match(ireland, /data-label="Device">desktop · Windows · Chrome</);
      assert.match(ireland, /data-label="Referrer">—</);
    });

    it("shows a click's country, device, OS, browser and referrer host on its page", async () => {
      const list = await env.request('GET', '/api/v1/clicks?limit=100');
      const fromUs = list.body.data.find((c: { country: string }) => c.country === 'US');
      assert.ok(fromUs, 'the click from the United States is listed by the API');
      const text = (await client.get(`/dashboard/clicks/${fromUs.id}`)).body
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ');
      assert.match(
        text,
        /Country United States \(US\) Device mobile Operating system iOS Browser Mobile Safari Referrer host blog\.example\.org/,
      );
    });
  });
}
