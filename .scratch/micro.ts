import { performance } from 'node:perf_hooks';
import { addFact } from './oldfold.js';
import { sumFacts } from '../src/modules/analytics/fold.js';
const pick = (n: number, i: number, s: number) => (Math.imul(i ^ Math.imul(s, 0x9e3779b1), 2654435761) >>> 8) % n;
const facts: any[] = [];
for (let i = 0; i < 50000; i++) facts.push({ brand_id: 'brd_x', day: '2026-11-23', hour: String(10).padStart(2,'0'), offer_id: `off_${i%20}`, partner_id: `prt_${Math.floor(i/20)%100}`, currency: 'USD', country: `C${pick(50,i,1)}`, device_type: `d${pick(5,i,2)}`, os: `os${pick(10,i,3)}`, browser: `b${pick(15,i,4)}`, referrer_host: i%3? `site${pick(200,i,5)}.example`: null, sub1: `campaign-${pick(1000,i,6)}`, sub2: pick(10,i,7)===0? `x${pick(50,i,8)}`: null, sub3: null, sub4: null, sub5: null, clicks: 1, pending: 0, approved: 0, rejected: 0, revenue_cents: 0, payout_cents: 0 });
for (let round = 0; round < 3; round++) {
  let t = performance.now();
  for (let b = 0; b < facts.length; b += 500) { const m = new Map(); for (const f of facts.slice(b, b+500)) addFact(m, f); [...m.entries()].sort(([a],[c]) => a < c ? -1 : a > c ? 1 : 0); }
  const old = performance.now() - t;
  t = performance.now();
  let rows = 0, pairs = 0;
  for (let b = 0; b < facts.length; b += 500) { const r = sumFacts(facts.slice(b, b+500)); rows += r.rollups.size; pairs += r.pairs.size; const j = JSON.stringify([...r.rollups.values()].map(x => [x.brandId, x.dimension, x.level, x.day, x.offerId, x.partnerId, x.value, x.currency, ...x.sums])); }
  const neu = performance.now() - t;
  console.log(`old ${(old/50).toFixed(2)} ms/1000 facts; new (incl. JSON) ${(neu/50).toFixed(2)} ms/1000 facts; rollup rows/batch ${(rows/100).toFixed(0)}, pair rows/batch ${(pairs/100).toFixed(0)}`);
}
