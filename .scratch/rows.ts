import { sumFacts } from '../src/modules/analytics/fold.js';
const pick = (n: number, i: number, s: number) => (Math.imul(i ^ Math.imul(s, 0x9e3779b1), 2654435761) >>> 8) % n;
const fact = (i: number) => ({ brand_id: 'brd_x', day: '2026-11-23', hour: '10', offer_id: `off_${i%20}`, partner_id: `prt_${Math.floor(i/20)%100}`, currency: 'USD', country: `C${pick(50,i,1)}`, device_type: `d${pick(5,i,2)}`, os: `os${pick(10,i,3)}`, browser: `b${pick(15,i,4)}`, referrer_host: i%3? `site${pick(200,i,5)}.example`: null, sub1: `campaign-${pick(1000,i,6)}`, sub2: pick(10,i,7)===0? `x${pick(50,i,8)}`: null, sub3: null, sub4: null, sub5: null, clicks: 1, pending: 0, approved: 0, rejected: 0, revenue_cents: 0, payout_cents: 0 });
const { rollups, pairs } = sumFacts(Array.from({ length: 500 }, (_, i) => fact(i)) as any);
const c: Record<string, number> = {};
for (const r of rollups.values()) c[`${r.dimension || '-'}@${r.level}`] = (c[`${r.dimension || '-'}@${r.level}`] ?? 0) + 1;
console.log(c, pairs.size);
