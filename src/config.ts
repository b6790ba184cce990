/**
 * Configuration is read from the environment exactly once, validated, and passed down as a
 * typed object. Nothing else in the code reads `process.env` (STYLE §9).
 */
import { isIP } from 'node:net';
import path from 'node:path';

export interface Config {
  port: number;
  host: string;
  /**
   * Base URL of every link Affitrack prints or serves. Without PUBLIC_URL it is this
   * process's own address (HOST and PORT), updated to the port actually bound when PORT=0.
   */
  publicUrl: string;
  /** PUBLIC_URL was given: the bound port never changes `publicUrl`. */
  publicUrlIsExplicit: boolean;
  dataDir: string;
  databaseUrl: string | null;
  /** PostgreSQL: run parameterised statements as named prepared statements (db/namedStatements.ts). */
  databaseNamedStatements: boolean;
  redisUrl: string | null;
  rateLimitPerMinute: number;
  applyRateLimitPerMinute: number;
  postbackRateLimitPerMinute: number;
  webhookRetryDelaysMs: number[];
  webhookMaxAttempts: number;
  webhookTimeoutMs: number;
  webhookAllowPrivateNetworks: boolean;
  /** Attempts in flight at once in one worker, and per subscription. */
  webhookConcurrency: number;
  webhookConcurrencyPerSubscription: number;
  /** Which proxies' X-Forwarded-For is believed (TRUST_PROXY); null: none, the peer is the client. */
  trustProxy: TrustProxy;
  logLevel: string;
  bodyLimitBytes: number;
  /** Time a client has to send a whole request (slow clients are cut off). */
  requestTimeoutMs: number;
  /** How long after an attempt's time-out a claimed delivery may be taken over by another worker. */
  webhookLeaseMarginMs: number;
  /** Age after which the worker deletes rows (modules/retention); null keeps them for ever. */
  retentionDeliveriesMs: number | null;
  retentionEventsMs: number | null;
  retentionClicksMs: number | null;
  /** Rows one retention batch deletes at most: one short write transaction. */
  retentionBatchSize: number;
  /** GET /metrics: off unless a port or a token is set (modules/metrics). */
  metricsPort: number | null;
  metricsToken: string | null;
  /**
   * Auto-disable: a subscription whose every delivery failed for `ms` and at least
   * `deliveries` deliveries is disabled (WEBHOOK_DISABLE_AFTER, e.g. `5d,20`; `off` = never).
   */
  webhookDisableAfter: { ms: number; deliveries: number } | null;
  /** Sends per second when parked or recovered deliveries are replayed (WEBHOOK_REPLAY_RATE). */
  webhookReplayRatePerSecond: number;
}

/** The nearest `hops` proxies, whoever they are; or only proxies at these addresses/CIDRs. */
export type TrustProxy = { hops: number } | { proxies: string[] } | null;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid ${variable}: ${message}`);
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `250ms`, `10s`, `5m`, `2h`, `30d`; null for anything else, a bare number included. */
export function parseDuration(text: string): number | null {
  // The unit is required: a bare `10` could mean seconds to one reader and milliseconds to another.
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!match?.[2]) return null;
  const unit = DURATION_UNITS_MS[match[2]] ?? 1;
  return Math.round(Number(match[1]) * unit);
}

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}`);
  return value;
}

function readBool(env: Env, name: string, fallback = false): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `expected true or false, got "${env[name]}"`);
}

/** More proxies than this in front of one service is a typo, not a deployment. */
const MAX_PROXY_HOPS = 10;
/** Named ranges Fastify's proxy-addr understands in a trusted-proxy list. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`: a plain address, optionally with a prefix length. */
function isAddressOrCidr(text: string): boolean {
  const [address = '', prefix, ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: `false` (no proxy), a hop count, or a list of the proxies' addresses. `true`
 * means one hop: trusting every hop would take the client IP from the left of
 * X-Forwarded-For, which the client writes itself when a proxy appends to it.
 */
function readTrustProxy(env: Env, name: string): TrustProxy {
  const raw = env[name]?.trim() ?? '';
  const word = raw.toLowerCase();
  if (['', 'false', 'no', 'off'].includes(word)) return null;
  if (['true', 'yes', 'on'].includes(word)) return { hops: 1 };
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > MAX_PROXY_HOPS) throw new ConfigError(name, `a hop count must be between 0 and ${MAX_PROXY_HOPS}`);
    return hops === 0 ? null : { hops };
  }
  const proxies = raw.split(',').map((part) => part.trim());
  if (proxies.some((p) => !isAddressOrCidr(p) && !PROXY_RANGE_NAMES.includes(p))) {
    throw new ConfigError(
      name,
      `expected false, true, a hop count like 1, or proxy addresses/CIDRs like 10.0.0.0/8,127.0.0.1, got "${env[name]}"`,
    );
  }
  return { proxies };
}

const DAY_MS = 86_400_000;
/** Node's timers hold at most 2^31 - 1 ms (24.8 days): a longer time-out fired at once. */
const MAX_TIMER_DAYS = 24;

function readDuration(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = parseDuration(raw);
  if (value === null || value <= 0 || value > MAX_TIMER_DAYS * DAY_MS) {
    throw new ConfigError(name, `expected a duration like 10s, at most ${MAX_TIMER_DAYS}d, got "${raw}"`);
  }
  return value;
}

/**
 * The longest window (a retention, WEBHOOK_DISABLE_AFTER): ten years is `off` in all but name,
 * and far beyond it a time that far back or ahead leaves JavaScript's Date range (±273,790
 * years), so the answers that print it fail (500) long after start-up accepted the value.
 */
const MAX_WINDOW_DAYS = 3650;

/** A retention window: a duration (`30d`), or `off` to keep rows for ever. At least a day. */
function readRetention(env: Env, name: string, fallbackDays: number): number | null {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallbackDays * DAY_MS;
  if (raw.toLowerCase() === 'off') return null;
  const value = parseDuration(raw);
  if (value === null || value < DAY_MS || value > MAX_WINDOW_DAYS * DAY_MS)
    throw new ConfigError(name, `expected off or a duration from 1d to ${MAX_WINDOW_DAYS}d, got "${raw}"`);
  return value;
}

/** A bearer token for GET /metrics: long enough not to be guessed, printable, no spaces. */
function readToken(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (!/^[\x21-\x7e]{16,256}$/.test(raw))
    throw new ConfigError(name, 'expected 16 to 256 printable characters, no spaces');
  return raw;
}

/**
 * Retry delays, each at most MAX_TIMER_DAYS like the other durations: a delivery's next attempt
 * is written and shown as a date, and a delay past the Date range (`100000000d`) started fine
 * and then made the delivery log answer 500.
 */
function readDelays(env: Env, name: string): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return [1000, 5000, 30_000, 300_000, 1_800_000, 7_200_000];
  const delays = raw.split(',').map((part) => parseDuration(part));
  if (delays.length === 0 || delays.some((d) => d === null || d < 0 || d > MAX_TIMER_DAYS * DAY_MS)) {
    throw new ConfigError(
      name,
      `expected a comma list of durations like 1s,5s,30s, each at most ${MAX_TIMER_DAYS}d, got "${raw}"`,
    );
  }
  return delays as number[];
}

/** Default auto-disable rule (issue #20): every delivery failed for 5 days, and at least 20 of them. */
const DEFAULT_DISABLE_AFTER = { ms: 5 * 86_400_000, deliveries: 20 };

function readDisableAfter(env: Env, name: string): Config['webhookDisableAfter'] {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_DISABLE_AFTER;
  if (raw.toLowerCase() === 'off') return null;
  const [duration, deliveries, ...rest] = raw.split(',');
  const ms = parseDuration(duration ?? '');
  if (
    ms === null ||
    ms <= 0 ||
    ms > MAX_WINDOW_DAYS * DAY_MS ||
    rest.length > 0 ||
    !/^\s*\d+\s*$/.test(deliveries ?? '') ||
    Number(deliveries) < 1
  ) {
    throw new ConfigError(
      name,
      `expected a duration of at most ${MAX_WINDOW_DAYS}d and a delivery count like 5d,20 (or off), got "${raw}"`,
    );
  }
  return { ms, deliveries: Number(deliveries) };
}

function readUrl(env: Env, name: string, protocols: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

/** Where the SQLite database lives without DATA_DIR, relative to the working directory. */
export const DEFAULT_DATA_DIR = './data';

/** Addresses that mean "every interface": a browser cannot open them, their loopback twin it can. */
const WILDCARD_HOSTS: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '[::1]' };

/** The URL a person on this machine opens to reach a server listening on `host`:`port`. */
export function localUrl(host: string, port: number): string {
  const name = WILDCARD_HOSTS[host] ?? (host.includes(':') ? `[${host}]` : host);
  return `http://${name}:${port}`;
}

export function loadConfig(env: Env = process.env): Config {
  const port = readInt(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST?.trim() || '127.0.0.1';
  const explicitUrl = readUrl(env, 'PUBLIC_URL', ['http:', 'https:']);
  // Links are the base plus a path (`…/dashboard`, `…/portal/invite?token=…`): after a query
  // string or fragment every one of them would be broken.
  if (explicitUrl !== null && /[?#]/.test(explicitUrl)) {
    throw new ConfigError(
      'PUBLIC_URL',
      'must not carry a query string or fragment (? or #): it is the base of every link',
    );
  }
  const publicUrl = (explicitUrl ?? localUrl(host, port)).replace(/\/+$/, '');
  const logLevel = env.LOG_LEVEL?.trim() || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  return {
    port,
    host,
    publicUrl,
    publicUrlIsExplicit: explicitUrl !== null,
    dataDir: path.resolve(env.DATA_DIR?.trim() || DEFAULT_DATA_DIR),
    databaseUrl: readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseNamedStatements: readBool(env, 'DATABASE_NAMED_STATEMENTS', true),
    redisUrl: readUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimitPerMinute: readInt(env, 'RATE_LIMIT_PER_MINUTE', 100, 1, 100_000_000),
    applyRateLimitPerMinute: readInt(env, 'APPLY_RATE_LIMIT_PER_MINUTE', 10, 1, 100_000_000),
    postbackRateLimitPerMinute: readInt(env, 'POSTBACK_RATE_LIMIT_PER_MINUTE', 600, 1, 100_000_000),
    webhookRetryDelaysMs: readDelays(env, 'WEBHOOK_RETRY_DELAYS'),
    webhookMaxAttempts: readInt(env, 'WEBHOOK_MAX_ATTEMPTS', 6, 1, 100),
    webhookTimeoutMs: readDuration(env, 'WEBHOOK_TIMEOUT', 10_000),
    webhookAllowPrivateNetworks: readBool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
    webhookConcurrency: readInt(env, 'WEBHOOK_CONCURRENCY', 64, 1, 10_000),
    webhookConcurrencyPerSubscription: readInt(env, 'WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION', 16, 1, 10_000),
    trustProxy: readTrustProxy(env, 'TRUST_PROXY'),
    logLevel,
    bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576),
    requestTimeoutMs: readDuration(env, 'REQUEST_TIMEOUT', 30_000),
    webhookLeaseMarginMs: readDuration(env, 'WEBHOOK_LEASE_MARGIN', 30_000),
    retentionDeliveriesMs: readRetention(env, 'RETENTION_DELIVERIES', 30),
    retentionEventsMs: readRetention(env, 'RETENTION_EVENTS', 30),
    retentionClicksMs: readRetention(env, 'RETENTION_CLICKS', 90),
    retentionBatchSize: readInt(env, 'RETENTION_BATCH_SIZE', 200, 1, 10_000),
    metricsPort: env.METRICS_PORT?.trim() ? readInt(env, 'METRICS_PORT', 0, 1, 65535) : null,
    metricsToken: readToken(env, 'METRICS_TOKEN'),
    webhookDisableAfter: readDisableAfter(env, 'WEBHOOK_DISABLE_AFTER'),
    webhookReplayRatePerSecond: readInt(env, 'WEBHOOK_REPLAY_RATE', 10, 1, 10_000),
  };
}
