import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { type CountryRanges, loadCountryRanges } from '../../src/modules/analytics/countries.js';
import { parseUserAgent, referrerHostOf } from '../../src/modules/analytics/enrichment.js';
import { isPublicAddress } from '../../src/modules/deliveries/ssrf.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';

const UA = {
  windowsChrome:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  iphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  ipad: 'Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  macSafari:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15',
};

/** The package's IPv4 ranges read the plain way: [start, end, country] per line. */
function referenceRanges(): Array<[number, number, string]> {
  const dir = path.dirname(
    createRequire(import.meta.url).resolve('@ip-location-db/geo-whois-asn-country/package.json'),
  );
  return readFileSync(path.join(dir, 'geo-whois-asn-country-ipv4-num.csv'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [start, end, country] = line.split(',');
      return [Number(start), Number(end), String(country).trim()];
    });
}

describe('click enrichment', () => {
  let countries: CountryRanges;
  before(async () => {
    countries = await loadCountryRanges();
  });

  it('finds the country of public IPv4 addresses exactly as a linear scan of the data does', () => {
    const ranges = referenceRanges();
    // The most specific range: the last one (in file order) starting at or before the address
    // that still holds it.
    const scan = (n: number) => {
      let found: string | null = null;
      for (const [start, end, country] of ranges) {
        if (start > n) break;
        if (n <= end) found = country;
      }
      return found;
    };
    // Addresses from anywhere, and addresses at range edges (where an off-by-one would show).
    const edge = fc
      .tuple(fc.integer({ min: 0, max: ranges.length - 1 }), fc.integer({ min: -1, max: 1 }), fc.boolean())
      .map(([i, delta, atEnd]) => {
        const range = ranges[i] as [number, number, string];
        return Math.min(2 ** 32 - 1, Math.max(0, (atEnd ? range[1] : range[0]) + delta));
      });
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), edge), (n) => {
        const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
        assert.equal(countries.lookup(ip), isPublicAddress(ip) ? scan(n) : null, ip);
      }),
      { numRuns: 300 },
    );
  });

  it('finds IPv6 countries and answers null for addresses in no range', () => {
    assert.equal(countries.lookup('2a00:1450:4001::1'), 'IE');
    assert.equal(countries.lookup('2001:200::1'), 'AU');
    assert.equal(countries.lookup('::1'), null);
    assert.equal(countries.lookup('127.0.0.1'), null);
    assert.equal(countries.lookup('10.1.2.3'), null);
    assert.equal(countries.lookup('not-an-ip'), null);
  });

  it('answers null for private, shared, documentation and other special-purpose addresses the data gives a country', () => {
    // Each of these has a row in the data (192.168/16 and 172.16/12 as AU, the TEST-NETs as AU,
    // 2001:db8::/32 and the benchmarking 2001:2::/48 as JP).
    const special = [
      '192.168.0.1',
      '192.168.100.7',
      '172.17.0.1',
      '172.31.255.1',
      '198.51.100.1',
      '203.0.113.1',
      '2001:db8::1',
      '2001:2::1',
    ];
    for (const ip of special) assert.equal(countries.lookup(ip), null, ip);
    for (const ip of ['10.1.1.1', '100.64.0.1', '169.254.169.254', '192.0.2.1', '240.0.0.1', 'fe80::1', 'fc00::1'])
      assert.equal(countries.lookup(ip), null, ip);
    // Their public neighbours keep their country.
    assert.equal(countries.lookup('172.32.0.1'), 'US');
    assert.equal(countries.lookup('8.8.8.8'), 'US');
  });

  it('reads device type, OS and browser from the User-Agent', () => {
    assert.deepEqual(parseUserAgent(UA.windowsChrome), { deviceType: 'desktop', os: 'Windows', browser: 'Chrome' });
    assert.deepEqual(parseUserAgent(UA.iphone), { deviceType: 'mobile', os: 'iOS', browser: 'Mobile Safari' });
    assert.equal(parseUserAgent(UA.ipad).deviceType, 'tablet');
    assert.equal(parseUserAgent(UA.macSafari).deviceType, 'desktop');
    assert.equal(parseUserAgent(UA.googlebot).deviceType, 'bot');
    assert.equal(parseUserAgent(null).deviceType, 'bot');
    assert.equal(parseUserAgent('curl/8.4.0').deviceType, 'bot');
  });

  it('answers a repeated User-Agent from its cache with the same result object', () => {
    assert.equal(parseUserAgent(UA.windowsChrome), parseUserAgent(UA.windowsChrome));
  });

  it('keeps the lower-case host of a referrer and nothing for text that is not a URL', () => {
    assert.equal(referrerHostOf('https://News.Example.com:8443/a?b=c'), 'news.example.com');
    assert.equal(referrerHostOf('not a url'), null);
    assert.equal(referrerHostOf(null), null);
    assert.equal(referrerHostOf('about:blank'), null);
  });
});

for (const dialect of testedDialects()) {
  describe(`enriched clicks over HTTP (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    let partnerId: string;
    before(async () => {
      env = await createTestEnv(dialect, { env: { TRUST_PROXY: 'true' } });
      env.clock.set(Date.parse('2026-11-21T10:00:00Z'));
      offerId = (
        await env.request('POST', '/api/v1/offers', {
          body: { name: 'O', destinationUrl: 'https://shop.example/', revenueCents: 1000, payoutCents: 300 },
        })
      ).body.id;
      partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'P', email: 'p@example.com' } })).body
        .id;
    });
    after(() => env.close());

    async function click(headers: Record<string, string>) {
      const res = await env.app.inject({ method: 'GET', url: `/t/${offerId}/${partnerId}?sub1=news`, headers });
      assert.equal(res.statusCode, 302);
      return new URL(String(res.headers.location)).searchParams;
    }

    it('stores country, device, OS, browser and referrer host with the click and shows them in GET /clicks', async () => {
      await click({ 'user-agent': UA.iphone, referer: 'https://Blog.Example.org/post', 'x-forwarded-for': '8.8.8.8' });
      const list = await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=1`);
      assert.equal(list.status, 200);
      const [stored] = list.body.data;
      assert.deepEqual(
        {
          country: stored.country,
          deviceType: stored.deviceType,
          os: stored.os,
          browser: stored.browser,
          referrerHost: stored.referrerHost,
        },
        { country: 'US', deviceType: 'mobile', os: 'iOS', browser: 'Mobile Safari', referrerHost: 'blog.example.org' },
      );
    });

    it('stores no country for a click from a private address (a Docker bridge)', async () => {
      await click({ 'user-agent': UA.windowsChrome, 'x-forwarded-for': '172.17.0.1' });
      const [stored] = (await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=1`)).body.data;
      assert.equal(stored.ip, '172.17.0.1');
      assert.equal(stored.country, null);
    });

    it('passes the enrichment on to a conversion attributed by clickId, and reports by it', async () => {
      await click({ 'user-agent': UA.windowsChrome, 'x-forwarded-for': '2a00:1450:4001::1' });
      const [stored] = (await env.request('GET', `/api/v1/clicks?offerId=${offerId}&limit=1`)).body.data;
      const conversion = await env.request('POST', '/api/v1/conversions', { body: { clickId: stored.id } });
      assert.equal(conversion.status, 201);
      assert.equal(conversion.body.country, 'IE');
      assert.equal(conversion.body.deviceType, 'desktop');
      assert.equal(conversion.body.browser, 'Chrome');
      assert.equal(conversion.body.referrerHost, null);
      const report = await env.request('GET', '/api/v1/reports?from=2026-11-21&to=2026-11-21&groupBy=country');
      const ie = report.body.data.find((r: { country: string }) => r.country === 'IE');
      assert.equal(ie.clicks, 1);
      assert.equal(ie.conversions, 1);
    });
  });
}
