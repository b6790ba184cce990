/**
 * IP address → country (ISO 3166-1 alpha-2), in memory, no network: the ranges of the
 * `@ip-location-db/geo-whois-asn-country` package (public domain, CC0; built from the RIRs'
 * whois data and ASN announcements, refreshed upstream), read once per process into sorted
 * typed arrays and answered by binary search without allocating.
 *
 * - IPv6 ranges are kept by their upper 64 bits, as two 32-bit halves: registries allocate
 *   /64 or larger blocks, and the data's range ends all fill their lower 64 bits.
 * - Some ranges nest inside others (a country's block inside a provider's larger one). The
 *   answer is the most specific: the last-starting range that holds the address. A running
 *   maximum of the ends lets the search step back over ranges that end too early and stop as
 *   soon as none before can reach the address (almost always at once).
 * - Only globally routable addresses have a country. The data holds registrations for some
 *   special-purpose blocks (192.168.0.0/16 and 172.16.0.0/12 as AU, the TEST-NETs as AU,
 *   2001:db8::/32 as JP), which would count every click from a Docker bridge or an internal
 *   proxy as Australian; so loopback, private, CGNAT, link-local, documentation, benchmarking
 *   and reserved addresses answer null before the search, judged by the same "global unicast"
 *   rule that guards outbound webhooks (one rule for "a public address" in the service).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIPv4 } from 'node:net';
import path from 'node:path';
import { isPublicAddress } from '../deliveries/ssrf.js';

/** Sorted ranges of one address family; keys are numbers (IPv4) or [high, low] 32-bit halves. */
class Ranges {
  constructor(
    private readonly startsHigh: Uint32Array,
    private readonly startsLow: Uint32Array,
    private readonly endsHigh: Uint32Array,
    private readonly endsLow: Uint32Array,
    /** Largest end among ranges 0..i, per i (high and low halves). */
    private readonly reachHigh: Uint32Array,
    private readonly reachLow: Uint32Array,
    private readonly countries: Uint16Array,
  ) {}

  get length(): number {
    return this.startsHigh.length;
  }

  /** Index into the country codes of the most specific range holding (high, low); -1 if none. */
  find(high: number, low: number): number {
    let lo = 0;
    let hi = this.startsHigh.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.startsHigh[mid] as number, this.startsLow[mid] as number, high, low) <= 0) lo = mid + 1;
      else hi = mid - 1;
    }
    // hi: the last range starting at or before the address; step back over nested ranges.
    for (let i = hi; i >= 0; i--) {
      if (compare(this.reachHigh[i] as number, this.reachLow[i] as number, high, low) < 0) return -1;
      if (compare(this.endsHigh[i] as number, this.endsLow[i] as number, high, low) >= 0) {
        return this.countries[i] as number;
      }
    }
    return -1;
  }
}

function compare(aHigh: number, aLow: number, bHigh: number, bLow: number): number {
  return aHigh !== bHigh ? aHigh - bHigh : aLow - bLow;
}

export class CountryRanges {
  constructor(
    private readonly codes: string[],
    private readonly v4: Ranges,
    private readonly v6: Ranges,
  ) {}

  get size(): number {
    return this.v4.length + this.v6.length;
  }

  /** The country of `ip` (a normalised address), or null when it is not public or no range holds it. */
  lookup(ip: string): string | null {
    if (!isPublicAddress(ip)) return null;
    let index: number;
    if (isIPv4(ip)) index = this.v4.find(0, ipv4ToUint(ip));
    else {
      const upper = ipv6Upper64(ip);
      index = upper ? this.v6.find(upper[0], upper[1]) : -1;
    }
    return index < 0 ? null : (this.codes[index] ?? null);
  }
}

/** Dotted quad → unsigned 32-bit number, without allocating (this runs on every click). */
function ipv4ToUint(ip: string): number {
  let value = 0;
  let part = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46) {
      value = value * 256 + part;
      part = 0;
    } else part = part * 10 + (c - 48);
  }
  return value * 256 + part;
}

/** The upper 64 bits of an IPv6 address as [high 32, low 32]; null when it is not one. */
export function ipv6Upper64(ip: string): [number, number] | null {
  const halves = ip.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  // An embedded IPv4 tail (::ffff:1.2.3.4) only ever touches the lower 64 bits.
  const groupsOf = (parts: string[]) => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const missing = 8 - groupsOf(head) - groupsOf(tail);
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail].slice(0, 4);
  const values = groups.map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? Number.parseInt(g, 16) : -1));
  if (values.some((v) => v < 0)) return null;
  const [a = 0, b = 0, c = 0, d = 0] = values;
  return [a * 65536 + b, c * 65536 + d];
}

const COMMA = 44;
const NEWLINE = 10;
const COLON = 58;

/**
 * Reads one field of the CSV at `at` into `out` as [high, low] 32-bit halves, without
 * allocating (the files hold ~550,000 ranges): a decimal IPv4 number, or a textual IPv6
 * address of which the upper 64 bits are kept. Returns the index after the field.
 */
function readAddress(bytes: Buffer, at: number, ipv6: boolean, out: Uint32Array, groups: Uint32Array): number {
  let i = at;
  if (!ipv6) {
    let value = 0;
    for (; i < bytes.length && bytes[i] !== COMMA; i++) value = value * 10 + ((bytes[i] as number) - 48);
    out[0] = 0;
    out[1] = value;
    return i;
  }
  // Groups before '::' fill from the left, groups after it are shifted to the right end.
  groups.fill(0);
  let count = 0;
  let gap = -1;
  let group = 0;
  let digits = 0;
  for (; i < bytes.length && bytes[i] !== COMMA; i++) {
    const c = bytes[i] as number;
    if (c === COLON) {
      if (digits > 0) groups[count++] = group;
      else if (i > at) gap = count; // the second ':' of '::'
      group = 0;
      digits = 0;
    } else {
      group = group * 16 + (c <= 57 ? c - 48 : (c | 32) - 87);
      digits++;
    }
  }
  if (digits > 0) groups[count++] = group;
  if (gap >= 0) {
    const shift = 8 - count;
    for (let g = count - 1; g >= gap; g--) {
      groups[g + shift] = groups[g] as number;
      groups[g] = 0;
    }
  }
  out[0] = (groups[0] as number) * 65536 + (groups[1] as number);
  out[1] = (groups[2] as number) * 65536 + (groups[3] as number);
  return i;
}

function readRanges(bytes: Buffer, codes: Map<string, number>, ipv6: boolean): Ranges {
  let lines = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === NEWLINE) lines++;
  const n = lines + 1;
  const [startsHigh, startsLow, endsHigh, endsLow, reachHigh, reachLow] = Array.from(
    { length: 6 },
    () => new Uint32Array(n),
  ) as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  const countries = new Uint16Array(n);
  const address = new Uint32Array(2);
  const groups = new Uint32Array(8);
  let row = 0;
  let at = 0;
  while (at < bytes.length) {
    let eol = bytes.indexOf(NEWLINE, at);
    if (eol < 0) eol = bytes.length;
    if (eol - at > 2) {
      at = readAddress(bytes, at, ipv6, address, groups) + 1;
      startsHigh[row] = address[0] as number;
      startsLow[row] = address[1] as number;
      at = readAddress(bytes, at, ipv6, address, groups) + 1;
      endsHigh[row] = address[0] as number;
      endsLow[row] = address[1] as number;
      const code = bytes.toString('latin1', at, eol).trim();
      let index = codes.get(code);
      if (index === undefined) {
        index = codes.size;
        codes.set(code, index);
      }
      countries[row] = index;
      // The files are sorted by range start; the running maximum of the ends is kept per row.
      const previous = row - 1;
      const keepPrevious =
        previous >= 0 &&
        compare(
          reachHigh[previous] as number,
          reachLow[previous] as number,
          address[0] as number,
          address[1] as number,
        ) > 0;
      reachHigh[row] = keepPrevious ? (reachHigh[previous] as number) : (address[0] as number);
      reachLow[row] = keepPrevious ? (reachLow[previous] as number) : (address[1] as number);
      row++;
    }
    at = eol + 1;
  }
  const used = (a: Uint32Array) => a.subarray(0, row);
  return new Ranges(
    used(startsHigh),
    used(startsLow),
    used(endsHigh),
    used(endsLow),
    used(reachHigh),
    used(reachLow),
    countries.subarray(0, row),
  );
}

let loading: Promise<CountryRanges> | null = null;

/** The ranges, read once per process from the data package. */
export function loadCountryRanges(): Promise<CountryRanges> {
  if (!loading) {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@ip-location-db/geo-whois-asn-country/package.json'));
    loading = (async () => {
      const [v4, v6] = await Promise.all([
        readFile(path.join(dir, 'geo-whois-asn-country-ipv4-num.csv')),
        readFile(path.join(dir, 'geo-whois-asn-country-ipv6.csv')),
      ]);
      const codes = new Map<string, number>();
      const v4Ranges = readRanges(v4, codes, false);
      const v6Ranges = readRanges(v6, codes, true);
      return new CountryRanges([...codes.keys()], v4Ranges, v6Ranges);
    })();
  }
  return loading;
}
