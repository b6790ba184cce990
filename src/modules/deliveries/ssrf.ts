/**
 * SSRF guard for outbound webhooks and postbacks. A target is allowed only when every
 * address it resolves to is global unicast: an allow-list, not a deny-list, so forms nobody
 * thought of (SIIT `::ffff:0:a.b.c.d`, 6to4 `2002::/16`, IPv4-compatible `::a.b.c.d`…) are
 * refused by default. IPv4: what ipaddr.js calls plain `unicast` (not loopback, private,
 * CGNAT, link-local/metadata, multicast, documentation, benchmarking or reserved). IPv6: the
 * global unicast block 2000::/3 (RFC 4291 §2.4; everything outside it is reserved or
 * special) and, inside it, ipaddr.js's plain `unicast` (not Teredo, 6to4, ORCHID,
 * documentation…). The two forms that carry an IPv4 address a client may legitimately reach
 * — IPv4-mapped `::ffff:a.b.c.d` and NAT64 `64:ff9b::a.b.c.d` — are judged by that IPv4
 * address. The check runs when a URL is saved and again on the address actually dialled, so
 * DNS answers that change between the two (rebinding) are caught.
 */
import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { UnavailableError } from '../../errors.js';

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

export function isPublicAddress(address: string): boolean {
  // net.isIP first: ipaddr.js also parses the legacy IPv4 forms (`2130706433`, `0x7f.1`)
  // that are hostnames, not literals, for a resolver.
  const family = isIP(address);
  if (family === 0) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'ipv4Mapped') return isPublicAddress(v6.toIPv4Address().toString());
  if (range === 'rfc6052' && v6.match(ipaddr.parseCIDR('64:ff9b::/96'))) {
    const bytes = v6.toByteArray().slice(12);
    return isPublicAddress(bytes.join('.'));
  }
  return range === 'unicast' && v6.match(GLOBAL_UNICAST_V6);
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
 * Answers of the resolver saying the name has no address: the URL is wrong (or its DNS record
 * not yet published). Every other failure (EAI_AGAIN for a time-out or SERVFAIL, EAI_FAIL,
 * ECONNREFUSED…) is the resolver's, not the URL's.
 */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA']);

/** How long a client should wait before retrying a save the resolver failed: resolvers retry and time out within seconds. */
const RESOLVER_RETRY_AFTER_SECONDS = 5;

/**
 * Checks a URL's target at save time. Resolves to null when allowed, or the reason it is
 * refused. Names that do not resolve are refused too (a typo should not be accepted
 * silently); a resolver that fails for now throws an UnavailableError, since the URL may be
 * fine and a retry may succeed.
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
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && NO_SUCH_NAME.has(code)) return `the host ${hostname} does not resolve`;
      throw new UnavailableError(
        `The host ${hostname} could not be resolved right now (${String(code ?? error)}). Please retry shortly.`,
        RESOLVER_RETRY_AFTER_SECONDS,
      );
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
