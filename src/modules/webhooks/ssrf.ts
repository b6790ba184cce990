/**
 * SSRF guard for outbound webhooks and postbacks. A target is refused when any address it
 * resolves to is not globally routable: loopback, private (RFC 1918), CGNAT, link-local
 * (including cloud metadata 169.254.169.254), unique-local, multicast, documentation,
 * unspecified or reserved — for IPv4, IPv6 and IPv4 embedded in IPv6. The check runs when
 * a URL is saved and again on the address actually dialled, so DNS answers that change
 * between the two (rebinding) are caught.
 */
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), -compatible or NAT64 IPv6 address. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  // URL parsing writes embedded IPv4 in hex (http://[::127.0.0.1]/ becomes [::7f00:1]).
  const hex = /^(?:::ffff:|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4) return isPublicAddress(v4);
    return !blocked.check(address, 'ipv6');
  }
  return false;
}

export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKED';
}

/** Hostname of a URL as a bare address when it is an IP literal (WHATWG parsing already normalises 0x7f.1 etc.). */
function literalAddress(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : null;
}

function resolveAll(hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses.map((a) => a.address));
    });
  });
}

/**
 * Checks a URL's target at save time. Resolves to null when allowed, or the reason it is
 * refused. Names that do not resolve are refused too (a typo should not be accepted silently).
 */
export async function checkUrlTarget(url: string, allowPrivate: boolean): Promise<string | null> {
  if (allowPrivate) return null;
  const { hostname } = new URL(url);
  const literal = literalAddress(hostname);
  let addresses: string[];
  if (literal) {
    addresses = [literal];
  } else {
    try {
      addresses = await resolveAll(hostname);
    } catch {
      return `the host ${hostname} does not resolve`;
    }
  }
  const bad = addresses.find((a) => !isPublicAddress(a));
  return bad ? `the host resolves to ${bad}, which is not a public address` : null;
}

/** Refuses an IP-literal URL at dial time (literals bypass the lookup hook). */
export function assertLiteralAllowed(url: URL, allowPrivate: boolean): void {
  const literal = literalAddress(url.hostname);
  if (!allowPrivate && literal && !isPublicAddress(literal)) {
    throw new BlockedAddressError(`refused to connect to non-public address ${literal}`);
  }
}

/** A `lookup` for sockets that fails the connection when a resolved address is not public. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as Array<{ address: string; family: number }>;
      const bad = allowPrivate ? undefined : list.find((a) => !isPublicAddress(a.address));
      if (bad)
        return callback(new BlockedAddressError(`refused to connect to non-public address ${bad.address}`), '', 0);
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      const first = list[0];
      if (!first) return callback(new Error(`no address for ${hostname}`), '', 0);
      callback(null, first.address, first.family);
    });
  };
}
