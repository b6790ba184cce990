/**
 * What a click says about its visitor, worked out at redirect time from data shipped in npm
 * packages (no network): country from the IP (countries.ts), device type, OS and browser
 * from the User-Agent (`ua-parser-js` 1.x, MIT; `isbot` for robots), and the referrer's host.
 *
 * Parsing a User-Agent costs ~30–150 µs, more than the rest of the click together, while
 * real traffic repeats a few thousand User-Agent strings: results are kept in an LRU cache
 * keyed by the string, and a cached result is shared, not copied.
 */
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';
import { UAParser } from 'ua-parser-js';
import type { CountryRanges } from './countries.js';
import type { DeviceType } from './dimensions.js';

export interface UserAgentInfo {
  deviceType: DeviceType;
  os: string | null;
  browser: string | null;
}

export interface ClickEnrichment extends UserAgentInfo {
  country: string | null;
  referrerHost: string | null;
}

/** Distinct User-Agent strings kept parsed (~200 bytes each: well under a megabyte). */
const USER_AGENT_CACHE_SIZE = 4096;

/** Operating systems whose devices ua-parser-js leaves without a type: computers. */
const DESKTOP_OS = new Set([
  'Windows',
  'Mac OS',
  'macOS',
  'Linux',
  'Ubuntu',
  'Debian',
  'Fedora',
  'Mint',
  'Arch',
  'CentOS',
  'Gentoo',
  'Kubuntu',
  'Chromium OS',
  'Chrome OS',
  'FreeBSD',
  'OpenBSD',
  'NetBSD',
  'Solaris',
]);

const NO_USER_AGENT: UserAgentInfo = Object.freeze({ deviceType: 'bot', os: null, browser: null });

const parsed = new LRUCache<string, UserAgentInfo>({ max: USER_AGENT_CACHE_SIZE });

function deviceTypeOf(type: string | undefined, os: string | undefined): DeviceType {
  if (type === 'mobile' || type === 'tablet') return type;
  if (type !== undefined) return 'other'; // console, smarttv, wearable, embedded, xr
  return os !== undefined && DESKTOP_OS.has(os) ? 'desktop' : 'other';
}

/** Device type, OS and browser of a User-Agent; no User-Agent at all counts as a bot, as in fraud scoring. */
export function parseUserAgent(userAgent: string | null): UserAgentInfo {
  if (!userAgent) return NO_USER_AGENT;
  const cached = parsed.get(userAgent);
  if (cached) return cached;
  const result = new UAParser(userAgent).getResult();
  const info: UserAgentInfo = Object.freeze({
    deviceType: isbot(userAgent) ? 'bot' : deviceTypeOf(result.device.type, result.os.name),
    os: result.os.name ?? null,
    browser: result.browser.name ?? null,
  });
  parsed.set(userAgent, info);
  return info;
}

/** Lower-case host name of a Referer URL; null without one or when it has no host. */
export function referrerHostOf(referer: string | null): string | null {
  if (!referer || !URL.canParse(referer)) return null;
  const host = new URL(referer).hostname;
  return host === '' ? null : host;
}

export function enrichClick(
  countries: CountryRanges,
  input: { ip: string; userAgent: string | null; referer: string | null },
): ClickEnrichment {
  const agent = parseUserAgent(input.userAgent);
  return {
    country: countries.lookup(input.ip),
    deviceType: agent.deviceType,
    os: agent.os,
    browser: agent.browser,
    referrerHost: referrerHostOf(input.referer),
  };
}
