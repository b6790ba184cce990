/**
 * How a failed `affitrack` command is told: one line on stderr naming the cause, an exit
 * code that says whose move it is, and with `--json` the API's error shape on stdout. A stack
 * trace is for the people who write Affitrack, so it appears only with LOG_LEVEL=debug.
 */
import path from 'node:path';
import { type Config, ConfigError } from './config.js';
import { DomainError } from './errors.js';
import { ApiError, PG_UNAVAILABLE, toApiError } from './http/errors.js';

/** The command could not run where it is: the port, the database, or a bug. Trying again may help. */
export const EXIT_FAILURE = 1;
/** The command line or the configuration is wrong: running it again unchanged cannot help. */
export const EXIT_USER_ERROR = 2;

export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: typeof EXIT_FAILURE | typeof EXIT_USER_ERROR = EXIT_USER_ERROR,
  ) {
    super(message);
  }
}

export function usageError(message: string): CommandError {
  return new CommandError('usage_error', `${message} (see affitrack --help)`);
}

interface SystemError {
  code?: unknown;
  syscall?: unknown;
  path?: unknown;
  address?: unknown;
  port?: unknown;
  message?: unknown;
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
  ENOTDIR: 'a path component is not a directory',
  ENOENT: 'the directory cannot be created there',
  EEXIST: 'a file of that name is in the way',
  ENOSPC: 'no space left on the device',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EAI_FAIL: 'host name lookup failed',
};

function reasonOf(error: SystemError): string {
  const code = typeof error.code === 'string' ? error.code : '';
  // Connection errors of a host with several addresses come as an AggregateError whose message is empty.
  return REASONS[code] ?? (String(error.message ?? '') || code || 'unknown error');
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
]);
const SQLITE_UNUSABLE = /^SQLITE_(CANTOPEN|READONLY|PERM|NOTADB|CORRUPT|FULL|IOERR|BUSY)/;

function isWithin(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith(path.sep) ? outer : outer + path.sep);
}

/** Where the PostgreSQL database is, without the credentials DATABASE_URL may carry. */
function postgresTarget(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname || 'localhost'}:${url.port || 5432}${url.pathname}`;
}

function databaseError(error: SystemError, config: Config): CommandError | null {
  const code = typeof error.code === 'string' ? error.code : '';
  if (config.databaseUrl) {
    const unreachable =
      NETWORK_CODES.has(code) ||
      PG_UNAVAILABLE.test(code) ||
      /Connection terminated|connection timeout/i.test(String(error.message ?? ''));
    if (!unreachable) return null;
    return new CommandError(
      'database_unavailable',
      `cannot use PostgreSQL at ${postgresTarget(config.databaseUrl)} (DATABASE_URL): ${reasonOf(error)}`,
      EXIT_FAILURE,
    );
  }
  // A file-system error on DATA_DIR itself, on a parent it had to create, or on a file inside it.
  const inDataDir =
    typeof error.path === 'string' && (isWithin(error.path, config.dataDir) || isWithin(config.dataDir, error.path));
  if (!SQLITE_UNUSABLE.test(code) && !(inDataDir && code in REASONS)) return null;
  return new CommandError(
    'database_unavailable',
    `cannot use the SQLite database in ${config.dataDir} (DATA_DIR): ${reasonOf(error)}`,
    EXIT_FAILURE,
  );
}

/** The variables naming a port `serve` listens on (both on HOST). */
export type PortVariable = 'PORT' | 'METRICS_PORT';

/**
 * `serve` could not listen on the port `variable` names. The system's error alone cannot say
 * which of the server's ports it was (PORT and METRICS_PORT may even hold the same number),
 * so the caller that listened says it.
 */
export class ListenError extends Error {
  constructor(
    readonly variable: PortVariable,
    readonly port: number,
    readonly host: string,
    cause: unknown,
  ) {
    super(`cannot listen on ${host}:${port} (${variable})`, { cause });
  }
}

function listenError({ variable, port: configured, host: configuredHost, cause }: ListenError): CommandError {
  const error = (cause ?? {}) as SystemError;
  const port = typeof error.port === 'number' ? error.port : configured;
  const host = typeof error.address === 'string' ? error.address : configuredHost;
  switch (error.code) {
    case 'EADDRINUSE':
      return new CommandError(
        'port_in_use',
        `${variable} ${port} is already in use on ${host}: stop the process holding it or set ${variable} to a free port`,
        EXIT_FAILURE,
      );
    case 'EACCES':
      return new CommandError(
        'port_not_permitted',
        `${variable} ${port} on ${host} needs privileges this process does not have: set ${variable} to 1024 or above`,
        EXIT_FAILURE,
      );
    case 'EADDRNOTAVAIL':
      return new CommandError('host_unavailable', `HOST ${host} is not an address of this machine`, EXIT_FAILURE);
    // HOST is a name the system could not look up (listen resolves it first).
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return new CommandError(
        'host_unavailable',
        `HOST ${host} cannot be resolved (${reasonOf(error)}): set HOST to a name or address of this machine`,
        EXIT_FAILURE,
      );
    default:
      return new CommandError(
        'listen_failed',
        `cannot listen on ${host}:${port} (${variable}): ${reasonOf(error)}`,
        EXIT_FAILURE,
      );
  }
}

/** Turns anything a command throws into the one line the user sees. `config` is null when it did not load. */
export function toCommandError(error: unknown, config: Config | null): CommandError {
  if (error instanceof CommandError) return error;
  if (error instanceof ConfigError) return new CommandError('invalid_config', error.message);
  if (error instanceof ApiError || error instanceof DomainError) {
    const apiError = toApiError(error);
    if (apiError.status < 500) return new CommandError(apiError.code, apiError.message);
  }
  const system = (error ?? {}) as SystemError;
  const code = typeof system.code === 'string' ? system.code : '';
  if (code.startsWith('ERR_PARSE_ARGS_')) {
    // Node's first sentence names the problem; the rest is advice about `--` for other programs.
    const [problem] = String(system.message).split(/\.(?:\s|$)/);
    return usageError(problem || 'Invalid arguments');
  }
  if (error instanceof ListenError) return listenError(error);
  const database = config ? databaseError(system, config) : null;
  if (database) return database;
  const message = error instanceof Error ? error.message : String(error);
  return new CommandError('internal_error', `unexpected error: ${message}`, EXIT_FAILURE);
}

/** Writes the failure (stderr always, stdout too with --json) and returns the exit code. */
export function reportFailure(failure: CommandError, options: { json: boolean; stack?: string }): number {
  // One line, whatever a library put in its message, so scripts and log lines stay whole.
  const message = failure.message.replace(/\s*\n\s*/g, ' ');
  if (options.json) process.stdout.write(`${JSON.stringify({ error: { code: failure.code, message } })}\n`);
  const hint = failure.code === 'internal_error' && !options.stack ? ' (LOG_LEVEL=debug shows where)' : '';
  process.stderr.write(`affitrack: ${message}${hint}\n`);
  if (options.stack) process.stderr.write(`${options.stack}\n`);
  return failure.exitCode;
}
