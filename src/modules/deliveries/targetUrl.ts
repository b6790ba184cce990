/** The rule every target URL obeys when it is saved (webhook subscriptions, postback templates). */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { httpUrlProblem } from '../urls.js';
import { checkUrlTarget } from './ssrf.js';

const CREDENTIALS_PROBLEM =
  'must not contain a user name or password: authenticate deliveries with a signing secret, or a token in the path or query';

const OWN_URL_PROBLEM =
  'must not point at this service itself (PUBLIC_URL): a postback to its own tracking links or pixel would record clicks or conversions, and could feed on itself';

/**
 * Why `url`, which parses, is not written as the URL it is: the URL parser forgives spaces
 * around it, a missing `//` after the scheme or extra slashes after it, `\` for `/`, and
 * resolves dot segments, so ` http://h/x`, `http:/h/x`, `http:h/x`, `http:///h/x`, `http:\\h\x`
 * and `http://h/y/../x` all dial `http://h/x` — and a target stored as typed then shows a
 * URL that is not the one dialled. They are refused rather than rewritten: a postback template
 * cannot be rewritten by the parser (it percent-encodes the braces of a macro in the path),
 * and one rule holds for every target kind. Null when the text is the URL as sent.
 */
function sloppyUrlProblem(url: string): string | null {
  if (url.trim() !== url) return 'must not begin or end with spaces';
  if (!/^https?:\/\//i.test(url)) return 'must spell out "//" after the scheme: http://… or https://…';
  if (/^https?:\/\/\//i.test(url)) return 'must have exactly two slashes after the scheme: http://host/…';
  if (url.includes(' ')) return 'must not contain spaces: percent-encode them as %20';
  // In the query and fragment a backslash is sent as it is; before them it becomes "/".
  const beforeQuery = /^[^?#]*/.exec(url)?.[0] ?? url;
  if (beforeQuery.includes('\\')) return 'must separate its path with "/", not "\\"';
  // `/./` and `/../` (also as %2e) are resolved before the request: `/a/../b` dials `/b`.
  const path = beforeQuery.replace(/^https?:\/\/[^/]*/i, '');
  if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(path)) {
    return 'must not contain "." or ".." path segments: write the path they lead to';
  }
  return null;
}

/** Of a URL httpUrlProblem passed (so it parses). */
function hasCredentials(url: string): boolean {
  const parsed = new URL(url);
  return parsed.username !== '' || parsed.password !== '';
}

/**
 * A URL's host and port in one spelling per host. URL parsing already lowercases names,
 * converts internationalised ones to punycode (IDNA) and writes IP literals canonically
 * (`2130706433` → `127.0.0.1`, `[0::1]` → `[::1]`); this also drops the root label's dot
 * (`track.example.com.` is the same DNS name) and reads an IPv4-mapped IPv6 literal as its
 * IPv4 address (`[::ffff:127.0.0.1]` reaches `127.0.0.1`).
 */
function ownHostKey(url: string): string {
  const { hostname, port } = new URL(url);
  let host = hostname.replace(/\.+$/, '');
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : null;
  if (bare && isIP(bare) === 6) {
    const address = ipaddr.IPv6.parse(bare);
    if (address.isIPv4MappedAddress()) host = address.toIPv4Address().toString();
  }
  return port === '' ? host : `${host}:${port}`;
}

/**
 * Of a URL httpUrlProblem passed: whether it is on this service's own host (any scheme),
 * however the host is spelled. Another name or address of the same server is not known
 * here: the tracking link and the pixel also ignore the service's own sender (userAgent.ts).
 */
function isOwnHost(ctx: AppContext, url: string): boolean {
  return ownHostKey(url) === ownHostKey(ctx.config.publicUrl);
}

/**
 * Refuses URLs that are not absolute http(s), that are not written as the URL they dial
 * (spaces, `http:/host`, backslashes: see sloppyUrlProblem), that carry a user name or password (they would
 * be shown back in every answer and log, and are not sent: sign deliveries with a secret
 * instead), that point at this service itself, or that point into private networks (422).
 */
export async function validateTargetUrl(ctx: AppContext, url: string, path = 'url'): Promise<void> {
  const problem =
    httpUrlProblem(url) ??
    sloppyUrlProblem(url) ??
    (hasCredentials(url) ? CREDENTIALS_PROBLEM : null) ??
    (isOwnHost(ctx, url) ? OWN_URL_PROBLEM : null);
  if (problem) throw InvalidError.at(path, problem);
  const refusal = await checkUrlTarget(url, ctx.config.webhookAllowPrivateNetworks);
  if (refusal) throw InvalidError.at(path, refusal);
}
