#!/usr/bin/env node
/**
 * The `affitrack` command. It reads the same environment as the server. With `--json` a
 * command writes exactly one JSON object to stdout (its result, or `{ "error": … }`); logs and
 * error lines go to stderr. Exit codes: 0 done, 1 could not run here, 2 wrong command line or
 * configuration (cliErrors.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type TObject, Type } from '@sinclair/typebox';
import pino from 'pino';
import { CommandError, EXIT_FAILURE, reportFailure, toCommandError, usageError } from './cliErrors.js';
import { type Config, loadConfig } from './config.js';
import type { AppContext } from './context.js';
import { backupSqlite } from './db/backup.js';
import type { Database } from './db/database.js';
import { migrateToLatest, pendingMigrations } from './db/migrate.js';
import { serverHoldsLock } from './db/serveLock.js';
import { ApiError } from './http/errors.js';
import { jsonValidator } from './http/validation.js';
import { type AjvIssue, detailsFromAjv } from './http/validationErrors.js';
import { ApiKeyName } from './modules/apiKeys/schemas.js';
import { apiKeyToView, insertApiKey, listApiKeys, revokeApiKey } from './modules/apiKeys/service.js';
import { brandToApi, findBrandById } from './modules/brands/repository.js';
import { BrandName } from './modules/brands/schemas.js';
import { createBrandWithFirstKey } from './modules/brands/service.js';
import { createUser, generatePassword } from './modules/users/service.js';
import { closeContext, createContext, createLogger } from './runtime.js';
import { type Role, serve } from './server.js';

/** One line per command line: the command words, then its options and what it does. */
const COMMAND_LINES = [
  'serve [--role all|api|worker]             Run the service (default role: all; api/worker on PostgreSQL only)',
  'migrate                                   Apply pending database migrations',
  'backup FILE [--json]                      Copy the SQLite database to FILE, safe while the server runs',
  'brands create --name N [--timezone TZ] [--currency CUR] [--json]',
  'keys create --brand ID [--name N] [--rate-limit N] [--json]',
  'keys list --brand ID [--json]',
  'keys revoke KEY_ID [--json]',
  'users create --brand ID --email E [--password P] [--json]   Dashboard sign-in (a password is generated when omitted)',
];

const USAGE_FOOTER = `Environment: DATABASE_URL (unset = SQLite in DATA_DIR), DATA_DIR, PORT, HOST, … (see README).
Exit codes: 0 done; 1 could not run here (port in use, database unavailable, unexpected error);
2 wrong command line or configuration. With --json an error is also {"error":{"code","message"}} on stdout.`;

const USAGE = `Usage: affitrack <command> [options]
       affitrack --version | --help

Commands:
${COMMAND_LINES.map((line) => `  ${line}`).join('\n')}

${USAGE_FOOTER}`;

/**
 * The help of the command `positionals` start with (`keys` → its three command lines, `keys
 * list` → that one); the whole usage for no command or an unknown one.
 */
function commandHelp(positionals: string[]): string {
  const [command, sub] = positionals;
  const ofCommand = COMMAND_LINES.filter((line) => line.split(' ')[0] === command);
  const ofSub = ofCommand.filter((line) => line.split(' ')[1] === sub);
  const lines = ofSub.length > 0 ? ofSub : ofCommand;
  if (lines.length === 0) return USAGE;
  return `Usage:\n${lines.map((line) => `  affitrack ${line}`).join('\n')}\n\n${USAGE_FOOTER}`;
}

/** dist/cli.js and src/cli.ts both sit one level below package.json. */
function packageVersion(): string {
  return JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
}

function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/**
 * A command of a newer version must not migrate the SQLite database under a running server:
 * that (older) server would go on writing in the old way into the new schema (idempotency keys
 * unhashed where the new version looks for hashes, so a retry after the restart did the work
 * twice). The server that will use the new schema is the one to migrate it.
 */
async function refuseMigratingUnderServer(db: Database, dataDir: string): Promise<void> {
  const pending = await pendingMigrations(db);
  if (pending.length === 0 || !serverHoldsLock(dataDir)) return;
  throw new CommandError(
    'server_running',
    `the SQLite database in ${dataDir} (DATA_DIR) needs migrations of this version (${pending.join(', ')}) ` +
      'and a server is running on it: stop that server and run this command again, ' +
      "or start this version's server (affitrack serve), which migrates",
    EXIT_FAILURE,
  );
}

/**
 * Runs `work` against a migrated database (commands other than `migrate` migrate first, like
 * `serve`, except beside a running SQLite server: see refuseMigratingUnderServer).
 */
async function withContext<T>(config: Config, work: (ctx: AppContext) => Promise<T>, migrateFirst = true) {
  // CLI logs go to stderr so stdout carries only the command's output.
  const ctx = createContext(config, { logger: createLogger(config, pino.destination({ fd: 2, sync: true })) });
  try {
    if (migrateFirst) {
      if (ctx.db.dialect === 'sqlite') await refuseMigratingUnderServer(ctx.db, config.dataDir);
      await migrateToLatest(ctx.db);
    }
    return await work(ctx);
  } finally {
    await closeContext(ctx);
  }
}

const OPTIONS = {
  role: { type: 'string' },
  name: { type: 'string' },
  timezone: { type: 'string' },
  currency: { type: 'string' },
  brand: { type: 'string' },
  'rate-limit': { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  version: { type: 'boolean', short: 'v', default: false },
} as const;

function parseCommandLine(argv: string[]) {
  const commandLine = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  refuseSurplusArguments(commandLine.positionals);
  return commandLine;
}

/**
 * The command words of a command line that asks for help, wherever `--help` (`-h`) stands:
 * `affitrack serve extra --help` or `brands create --bogus --help` wants the command's help,
 * not a refusal of what it would have refused. Parsed leniently (unknown options and surplus
 * words are allowed), and `--name --help` counts too: there `--help` is no name, but a request
 * for help. After `--` it is a word (`backup -- --help` names a file). Null without one.
 */
function helpRequest(argv: string[]): string[] | null {
  const { tokens, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    tokens: true,
    options: OPTIONS,
  });
  const asked = tokens.some(
    (token) =>
      token.kind === 'option' &&
      (token.name === 'help' || (!token.inlineValue && (token.value === '--help' || token.value === '-h'))),
  );
  return asked ? positionals : null;
}

/**
 * How many words each command line takes, the command's own included. `keys revoke A B` used
 * to revoke A, drop B without a word and exit 0, leaving the second leaked key working; so a
 * word beyond these is refused before anything runs. Unknown commands and subcommands are
 * left to their own "Try: …" errors.
 */
const WORDS: Record<string, number | Record<string, number>> = {
  serve: 1,
  migrate: 1,
  backup: 2,
  brands: { create: 2 },
  users: { create: 2 },
  keys: { create: 2, list: 2, revoke: 3 },
};

function refuseSurplusArguments(positionals: string[]): void {
  const [command = '', sub = ''] = positionals;
  const known = Object.hasOwn(WORDS, command) ? WORDS[command] : undefined;
  const words = typeof known === 'object' ? (Object.hasOwn(known, sub) ? known[sub] : undefined) : known;
  if (words === undefined || positionals.length <= words) return;
  throw usageError(
    `unexpected argument "${positionals[words]}" after "affitrack ${positionals.slice(0, words).join(' ')}" ` +
      '(one command at a time; quote a value that holds spaces)',
  );
}

/**
 * The options each command takes (--json, --help and --version go with any). One option table
 * parses every command line, so an option of another command used to pass unread with exit 0:
 * `keys revoke KEY --brand B` revoked KEY whatever its brand, to an operator who took it for
 * a scope. Such an option is refused before anything runs.
 */
const COMMAND_OPTIONS: Record<string, string[] | Record<string, string[]>> = {
  serve: ['role'],
  migrate: [],
  backup: [],
  brands: { create: ['name', 'timezone', 'currency'] },
  users: { create: ['brand', 'email', 'password'] },
  keys: { create: ['brand', 'name', 'rate-limit'], list: ['brand'], revoke: [] },
};
const GLOBAL_OPTIONS = ['json', 'help', 'version'];

function refuseForeignOptions([command = '', sub = '']: string[], values: Record<string, unknown>): void {
  const known = Object.hasOwn(COMMAND_OPTIONS, command) ? COMMAND_OPTIONS[command] : undefined;
  const taken = known && !Array.isArray(known) ? (Object.hasOwn(known, sub) ? known[sub] : undefined) : known;
  if (taken === undefined) return;
  const foreign = Object.keys(values).find(
    (name) => values[name] !== undefined && !GLOBAL_OPTIONS.includes(name) && !taken.includes(name),
  );
  if (foreign === undefined) return;
  const usage = Array.isArray(known) ? command : `${command} ${sub}`;
  const allowed = taken.length ? `it takes ${taken.map((name) => `--${name}`).join(', ')}` : 'it takes no options';
  throw usageError(`"affitrack ${usage}" takes no --${foreign}; ${allowed}`);
}

/** Checks a command's input with the API's schema, validator and messages: one rule, wherever a name comes in. */
function checkAsTheApi(schema: TObject, input: Record<string, unknown>): void {
  const validate = jsonValidator(schema);
  if (!validate(input)) throw ApiError.validation(detailsFromAjv((validate.errors ?? []) as AjvIssue[], 'body'));
}

type CommandLine = ReturnType<typeof parseCommandLine>;

async function runCommand(config: Config, { values, positionals }: CommandLine): Promise<void> {
  const [command, sub, arg] = positionals;
  const json = values.json ?? false;
  refuseForeignOptions(positionals, values);
  switch (command) {
    case 'serve': {
      const role = (values.role ?? 'all') as Role;
      if (!['all', 'api', 'worker'].includes(role)) throw usageError('--role must be all, api or worker');
      // One server per SQLite DATA_DIR (serve lock): an API without its worker queued webhooks
      // that were never sent, and the worker that would send them was refused.
      if (role !== 'all' && config.databaseUrl === null) {
        throw new CommandError(
          'invalid_config',
          `--role ${role} is for PostgreSQL scale-out (DATABASE_URL): on SQLite one affitrack serve does both`,
        );
      }
      return serve(config, role);
    }
    case 'migrate':
      return withContext(
        config,
        async (ctx) => {
          const { applied } = await migrateToLatest(ctx.db);
          print(json, { applied }, applied.length ? `Applied: ${applied.join(', ')}` : 'Already up to date.');
        },
        false,
      );
    case 'backup':
      return backupCommand(config, sub, json);
    case 'brands':
      if (sub !== 'create') throw usageError('Try: affitrack brands create --name N');
      if (values.name === undefined) throw usageError('--name is required');
      checkAsTheApi(Type.Object({ name: BrandName }), { name: values.name });
      return withContext(config, async (ctx) => {
        const input = { name: values.name as string, timezone: values.timezone, currency: values.currency };
        const result = await ctx.db.transact((trx) => createBrandWithFirstKey(trx, ctx.clock, input));
        print(
          json,
          { brand: brandToApi(result.brand), apiKey: result.secret },
          `Brand ${result.brand.id} (${result.brand.slug}) created.\nAPI key (shown once): ${result.secret}`,
        );
      });
    case 'keys':
      return keysCommand(config, sub, arg, values, json);
    case 'users': {
      if (sub !== 'create') throw usageError('Try: affitrack users create --brand ID --email E');
      const { brand, email } = values;
      if (!brand || !email) throw usageError('--brand and --email are required');
      return withContext(config, async (ctx) => {
        const password = values.password ?? generatePassword();
        const user = await createUser(ctx, { brandId: brand, email, password });
        const generated = values.password === undefined;
        print(
          json,
          { user, ...(generated ? { password } : {}) },
          `Dashboard user ${user.email} created. Sign in at ${config.publicUrl}/dashboard${generated ? ` with password (shown once): ${password}` : ''}`,
        );
      });
    }
    default:
      throw usageError(`Unknown command "${command}"`);
  }
}

/** Not through withContext: a backup must neither migrate (it is taken before an upgrade) nor create a database. */
async function backupCommand(config: Config, file: string | undefined, json: boolean): Promise<void> {
  if (config.databaseUrl !== null) {
    throw new CommandError(
      'usage_error',
      'backup copies the SQLite database; on PostgreSQL (DATABASE_URL) back up with pg_dump',
    );
  }
  if (!file) throw usageError('Try: affitrack backup FILE');
  const target = path.resolve(file);
  const pages = await backupSqlite(config.dataDir, target);
  print(json, { file: target, pages }, `Backed up the database in ${config.dataDir} to ${target}.`);
}

async function keysCommand(
  config: Config,
  sub: string | undefined,
  arg: string | undefined,
  values: { brand?: string; name?: string; 'rate-limit'?: string },
  json: boolean,
): Promise<void> {
  if (sub === 'revoke') {
    if (!arg) throw usageError('Try: affitrack keys revoke KEY_ID');
    return withContext(config, async (ctx) => {
      const row = await revokeApiKey(ctx.db, ctx.clock, arg);
      if (!row) throw new CommandError('not_found', `No API key ${arg}`);
      print(json, { key: apiKeyToView(row) }, `Key ${row.id} revoked.`);
    });
  }
  if (sub !== 'create' && sub !== 'list') throw usageError('Try: affitrack keys create|list|revoke');
  const brandId = values.brand;
  if (!brandId) throw usageError('--brand is required');
  const rateLimitText = values['rate-limit'];
  // 1 to 1e9 a minute: 0 would refuse every request, and a huge number is no limit but unsafe arithmetic.
  if (rateLimitText !== undefined && !/^[1-9]\d{0,8}$/.test(rateLimitText)) {
    throw usageError('--rate-limit must be a whole number from 1 to 999999999 (requests per minute)');
  }
  if (sub === 'create') checkAsTheApi(Type.Object({ name: Type.Optional(ApiKeyName) }), { name: values.name });
  return withContext(config, async (ctx) => {
    if (!(await findBrandById(ctx.db.read, brandId))) throw new CommandError('not_found', `No brand ${brandId}`);
    if (sub === 'list') {
      const keys = (await listApiKeys(ctx.db, brandId)).map(apiKeyToView);
      const lines = keys.map((k) => `${k.id}  ${k.prefix}…  ${k.name}  ${k.revokedAt ? 'revoked' : 'active'}`);
      return print(json, { keys }, lines.join('\n') || 'No keys.');
    }
    const { key, secret } = await ctx.db.transact((trx) =>
      insertApiKey(trx, ctx.clock, {
        brandId,
        name: values.name,
        rateLimitPerMinute: rateLimitText === undefined ? null : Number(rateLimitText),
      }),
    );
    print(json, { key: apiKeyToView(key), apiKey: secret }, `Key ${key.id} created (shown once): ${secret}`);
  });
}

async function main(argv: string[]): Promise<void> {
  let config: Config | null = null;
  try {
    const help = helpRequest(argv);
    if (help) return print(false, null, commandHelp(help));
    const commandLine = parseCommandLine(argv);
    const { values, positionals } = commandLine;
    if (values.version) return print(values.json, { version: packageVersion() }, packageVersion());
    if (positionals.length === 0) return print(false, null, USAGE);
    config = loadConfig();
    await runCommand(config, commandLine);
  } catch (error) {
    const failure = toCommandError(error, config);
    const debug = config !== null && ['debug', 'trace'].includes(config.logLevel);
    const stack = debug && error instanceof Error ? error.stack : undefined;
    // Read from argv, not the parsed options, so a mistake in the arguments is answered in JSON too.
    process.exit(reportFailure(failure, { json: argv.includes('--json'), stack }));
  }
}

void main(process.argv.slice(2));
