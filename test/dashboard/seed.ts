/**
 * A brand that looks like a real one, for the browser tests and the README's screenshots:
 * a handful of offers and partners, a month of clicks from several countries, devices and
 * referrers, and conversions in every state — all made through the API and the tracking
 * link, as a brand's own traffic would be, with the test clock moved over the days.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { TestEnv } from '../helpers.js';

const DAY_MS = 86_400_000;
const DAYS = 30;

const OFFERS = [
  { name: 'Trail Running Shoes', revenueCents: 8900, payoutCents: 1200 },
  { name: 'Winter Jackets', revenueCents: 14_900, payoutCents: 2200 },
  { name: 'Camping Gear Bundle', revenueCents: 23_900, payoutCents: 3500, conversionStatus: 'approved' },
];
const PARTNERS = [
  { name: 'Outdoor Deals Blog', email: 'hello@outdoordeals.example', website: 'https://outdoordeals.example' },
  { name: 'GearReview Weekly', email: 'team@gearreview.example', website: 'https://gearreview.example' },
  { name: 'Coupon Harbor', email: 'partners@couponharbor.example', website: 'https://couponharbor.example' },
  { name: 'TrailTalk Podcast', email: 'ads@trailtalk.example', website: 'https://trailtalk.example' },
];
/** Countries of the clicks, the frequent ones repeated. */
const COUNTRIES = ['US', 'US', 'US', 'DE', 'DE', 'GB', 'GB', 'FR', 'CA', 'NL', 'AU', 'SE'];
const USER_AGENTS = [
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
];
const REFERRERS = [
  'https://outdoordeals.example/best-trail-shoes-2026',
  'https://www.google.com/',
  'https://gearreview.example/reviews/winter',
  null,
  'https://couponharbor.example/codes',
  'https://trailtalk.example/episodes/42',
];

/** An address of each country, from the country data the tracking link uses (IPv4 ranges). */
function addressesOf(countries: string[]): Map<string, string> {
  const dir = path.dirname(
    createRequire(import.meta.url).resolve('@ip-location-db/geo-whois-asn-country/package.json'),
  );
  const wanted = new Set(countries);
  const found = new Map<string, string>();
  for (const line of readFileSync(path.join(dir, 'geo-whois-asn-country-ipv4-num.csv'), 'utf8').split('\n')) {
    const [start, end, country = ''] = line.split(',');
    const code = country.trim();
    // A large block, far from its edges: nested, more specific ranges are rare inside those.
    if (!wanted.has(code) || found.has(code) || Number(end) - Number(start) < 65_536) continue;
    const n = Number(start) + 4097;
    found.set(code, [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'));
  }
  return found;
}

export interface SeededBrand {
  offers: string[];
  partners: string[];
  clicks: number;
  conversions: number;
}

/**
 * Seeds the brand of `env` (which must trust `X-Forwarded-For`, so clicks come from the
 * countries chosen). The clock ends where it started.
 */
export async function seedRealisticBrand(env: TestEnv): Promise<SeededBrand> {
  const api = async (method: string, url: string, body?: unknown) => {
    const res = await env.request(method, url, { body });
    assert.ok(res.status < 300, `${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const end = env.clock.now();
  // The brand's set-up a month ago, then its traffic day by day: the clock only moves forward.
  env.clock.set(end - (DAYS + 1) * DAY_MS);
  await api('PATCH', '/api/v1/brand', { name: 'Northwind Outdoor' });
  const offers: string[] = [];
  for (const offer of OFFERS) {
    offers.push(
      (await api('POST', '/api/v1/offers', { ...offer, destinationUrl: 'https://northwind.example/?c={click_id}' })).id,
    );
  }
  const partners: string[] = [];
  for (const partner of PARTNERS) partners.push((await api('POST', '/api/v1/partners', partner)).id);
  const ips = addressesOf(COUNTRIES);
  assert.equal(ips.size, new Set(COUNTRIES).size, 'an address for every country');

  let clicks = 0;
  let conversions = 0;
  for (let day = DAYS - 1; day >= 0; day--) {
    // More traffic towards today, with a weekly rhythm.
    const perDay = 3 + ((DAYS - day) >> 3) + ((day * 5) % 4);
    for (let k = 0; k < perDay; k++) {
      const n = clicks;
      env.clock.set(end - day * DAY_MS - (perDay - k) * 37 * 60_000);
      const offerId = offers[n % offers.length] as string;
      const partnerId = partners[(n * 7 + day) % partners.length] as string;
      const referer = REFERRERS[(n * 5) % REFERRERS.length];
      const res = await env.app.inject({
        method: 'GET',
        url: `/t/${offerId}/${partnerId}?sub1=${['newsletter', 'sidebar', 'review', 'social'][n % 4]}`,
        headers: {
          'user-agent': USER_AGENTS[(n * 3) % USER_AGENTS.length] as string,
          'x-forwarded-for': ips.get(COUNTRIES[(n * 11 + day) % COUNTRIES.length] as string) as string,
          ...(referer ? { referer } : {}),
        },
      });
      assert.equal(res.statusCode, 302);
      clicks += 1;
      // About one click in four converts, a few minutes later.
      if (n % 4 === 1) {
        env.clock.advance(4 * 60_000);
        const clickId = new URL(String(res.headers.location)).searchParams.get('c');
        const conversion = await api('POST', '/api/v1/conversions', {
          clickId,
          externalTxnId: `NW-${10_000 + n}`,
        });
        conversions += 1;
        // Older pending ones have been decided: most approved, a few rejected.
        if (conversion.status === 'pending' && day > 2) {
          if (n % 9 === 0)
            await api('POST', `/api/v1/conversions/${conversion.id}/reject`, { reason: 'Order returned' });
          else await api('POST', `/api/v1/conversions/${conversion.id}/approve`);
        }
      }
    }
  }
  env.clock.set(end);
  return { offers, partners, clicks, conversions };
}
