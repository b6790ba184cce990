/**
 * Who the client is: which proxies may say (TRUST_PROXY, turned into Fastify's `trustProxy`).
 */
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
