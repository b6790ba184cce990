/**
 * Who the client is, for the limits that count per client address: which proxies may say
 * (TRUST_PROXY, turned into Fastify's `trustProxy`), and which addresses count as one client.
 */
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../config.js';

/** The forms of Fastify's `trustProxy` that TRUST_PROXY turns into. */
type FastifyTrustProxy = false | string[] | ((address: string, hop: number) => boolean);

/**
 * Fastify's `trustProxy` for a TRUST_PROXY setting. A hop count becomes a function because
 * Fastify ignores a bare number (it trusts no hop then); the function trusts the nearest
 * `hops` addresses, so the client is the entry the outermost trusted proxy appended, never
 * what the client itself put at the left of X-Forwarded-For.
 */
export function fastifyTrustProxy(setting: TrustProxy): FastifyTrustProxy {
  if (setting === null) return false;
  if ('proxies' in setting) return setting.proxies;
  const { hops } = setting;
  return (_address, hop) => hop < hops;
}

/** IPv6 networks hand each customer at least a /64: its addresses are one client's to pick from. */
const IPV6_CLIENT_PREFIX = 64;

/**
 * The key a per-address limit counts `ip` under: an IPv4 address as itself (also when
 * written IPv4-mapped, `::ffff:1.2.3.4`), an IPv6 address by its /64, so a client cannot
 * get a fresh count from each of its 2^64 addresses. Anything unparseable counts as itself.
 */
export function ipLimitKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const bytes = parsed.toByteArray().slice(0, IPV6_CLIENT_PREFIX / 8);
  const network = ipaddr.fromByteArray([...bytes, ...new Array<number>(16 - bytes.length).fill(0)]);
  return `${network.toString()}/${IPV6_CLIENT_PREFIX}`;
}
