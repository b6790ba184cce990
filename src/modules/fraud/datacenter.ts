/**
 * `datacenter_ip`: is an address announced by a hosting or cloud provider? Ranges come from
 * the maintained `@ip-location-db/asn` package (IP range → ASN, refreshed upstream); we keep
 * only the ranges of the ASNs below, sorted, and answer by binary search (O(log n)). The
 * data is read once per process (by `serve` before it opens its port, else on first use).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIPv4 } from 'node:net';
import path from 'node:path';

/** Well-known hosting, cloud and VPS networks (ASN → operator), the usual source of bot clicks. */
export const HOSTING_ASNS: ReadonlyMap<number, string> = new Map([
  [16509, 'Amazon AWS'],
  [14618, 'Amazon AWS'],
  [8987, 'Amazon AWS'],
  [15169, 'Google'],
  [396982, 'Google Cloud'],
  [19527, 'Google Cloud'],
  [8075, 'Microsoft Azure'],
  [8068, 'Microsoft'],
  [14061, 'DigitalOcean'],
  [16276, 'OVH'],
  [24940, 'Hetzner'],
  [213230, 'Hetzner Cloud'],
  [63949, 'Akamai Linode'],
  [20473, 'Vultr (Choopa)'],
  [45102, 'Alibaba Cloud'],
  [37963, 'Alibaba Cloud'],
  [31898, 'Oracle Cloud'],
  [132203, 'Tencent Cloud'],
  [45090, 'Tencent Cloud'],
  [12876, 'Scaleway'],
  [51167, 'Contabo'],
  [60781, 'Leaseweb'],
  [28753, 'Leaseweb'],
  [30633, 'Leaseweb'],
  [16265, 'Leaseweb'],
  [36352, 'ColoCrossing'],
  [55286, 'ServerMania'],
  [40676, 'Psychz Networks'],
  [46606, 'Unified Layer'],
  [26496, 'GoDaddy'],
  [398101, 'GoDaddy'],
  [53667, 'FranTech (BuyVM)'],
  [9009, 'M247'],
  [62563, 'GTHost'],
  [174, 'Cogent (hosting transit)'],
  [35916, 'MULTACOM'],
  [19318, 'Interserver'],
  [8100, 'QuadraNet'],
  [29802, 'HIVELOCITY'],
  [32613, 'IWEB'],
  [136907, 'Huawei Cloud'],
  [55990, 'Huawei Cloud'],
  [200019, 'AlexHost'],
  [211252, 'Delis'],
  [212238, 'Datacamp (CDN77)'],
  [60068, 'Datacamp (CDN77)'],
  [13335, 'Cloudflare'],
]);

interface Ranges<T> {
  starts: T[];
  ends: T[];
}

export class DatacenterRanges {
  constructor(
    private readonly v4: Ranges<number>,
    private readonly v6: Ranges<bigint>,
  ) {}

  get size(): number {
    return this.v4.starts.length + this.v6.starts.length;
  }

  contains(ip: string): boolean {
    if (isIPv4(ip)) return search(this.v4, ipv4ToNumber(ip));
    const value = ipv6ToBigInt(ip);
    return value !== null && search(this.v6, value);
  }
}

function search<T extends number | bigint>(ranges: Ranges<T>, value: T): boolean {
  let lo = 0;
  let hi = ranges.starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((ranges.starts[mid] as T) <= value) lo = mid + 1;
    else hi = mid - 1;
  }
  // hi is the last range starting at or before value.
  return hi >= 0 && value <= (ranges.ends[hi] as T);
}

export function ipv4ToNumber(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

export function ipv6ToBigInt(ip: string): bigint | null {
  let text = ip.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const n = ipv4ToNumber(v4[1]);
    text = `${text.slice(0, -v4[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array(missing).fill('0'), ...tail];
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  }
  return value;
}

const COMMA = 44;
const NEWLINE = 10;

/**
 * The ranges of HOSTING_ASNS in one CSV (`start,end,asn,name`, sorted by start). It scans the
 * bytes and reads the ASN as a number in place: only the few matching rows become strings
 * (line-by-line reading made ~700,000 strings and took most of a second).
 */
async function readRanges<T>(file: string, parse: (text: string) => T): Promise<Ranges<T>> {
  const bytes = await readFile(file);
  const starts: T[] = [];
  const ends: T[] = [];
  let at = 0;
  while (at < bytes.length) {
    let eol = bytes.indexOf(NEWLINE, at);
    if (eol < 0) eol = bytes.length;
    const first = bytes.indexOf(COMMA, at);
    const second = first < 0 ? -1 : bytes.indexOf(COMMA, first + 1);
    if (second >= 0 && second < eol) {
      let asn = 0;
      for (let i = second + 1; i < eol && bytes[i] !== COMMA; i++) asn = asn * 10 + ((bytes[i] as number) - 48);
      if (HOSTING_ASNS.has(asn)) {
        starts.push(parse(bytes.toString('latin1', at, first)));
        ends.push(parse(bytes.toString('latin1', first + 1, second)));
      }
    }
    at = eol + 1;
  }
  return { starts, ends };
}

let loading: Promise<DatacenterRanges> | null = null;

/** The ranges, read once per process from the data package. */
export function loadDatacenterRanges(): Promise<DatacenterRanges> {
  if (!loading) {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@ip-location-db/asn/package.json'));
    loading = Promise.all([
      readRanges(path.join(dir, 'asn-ipv4-num.csv'), Number),
      readRanges(path.join(dir, 'asn-ipv6-num.csv'), BigInt),
    ]).then(([v4, v6]) => new DatacenterRanges(v4, v6));
  }
  return loading;
}
