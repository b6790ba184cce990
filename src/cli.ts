#!/usr/bin/env node
/**
 * The `affitrack` command. It reads the same environment as the server. With `--json` a
 * command writes exactly one JSON object to stdout; logs and errors go to stderr.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { type Config, ConfigError, loadConfig } from './config.js';
import type { AppContext } from './context.js';
import { migrateToLatest } from './db/migrate.js';
import { ApiError } from './http/errors.js';
import { apiKeyToView, insertApiKey, listApiKeys, revokeApiKey } from './modules/apiKeys/service.js';
import { brandToApi, findBrandById } from './modules/brands/repository.js';
import { createBrandWithFirstKey } from './modules/brands/service.js';
import { createUser, generatePassword } from './modules/users/service.js';
import { closeContext, createContext, createLogger } from './runtime.js';
import { type Role, serve } from './server.js';

const USAGE = `Usage: affitrack <command> [options]

Commands:
  serve [--role all|api|worker]             Run the service (default role: all)
  migrate                                   Apply pending database migrations
  brands create --name N [--timezone TZ] [--currency CUR] [--json]
  keys create --brand ID [--name N] [--rate-limit N] [--json]
  keys list --brand ID [--json]
  keys revoke KEY_ID [--json]
  users create --brand ID --email E [--password P] [--json]   Dashboard sign-in (a password is generated when omitted)

Environment: DATABASE_URL (unset = SQLite in DATA_DIR), DATA_DIR, PORT, HOST, … (see README).`;

class UsageError extends Error {}

function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/** Runs `work` against a migrated database (commands other than `migrate` migrate first, like `serve`). */
async function withContext<T>(config: Config, work: (ctx: AppContext) => Promise<T>, migrateFirst = true) {
  // CLI logs go to stderr so stdout carries only the command's output.
  const ctx = createContext(config, { logger: createLogger(config, pino.destination({ fd: 2, sync: true })) });
  try {
    if (migrateFirst) await migrateToLatest(ctx.db);
    return await work(ctx);
  } finally {
    await closeContext(ctx);
  }
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
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
    },
  });
  const [command, sub, arg] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const json = values.json ?? false;

  switch (command) {
    case 'serve': {
      const role = (values.role ?? 'all') as Role;
      if (!['all', 'api', 'worker'].includes(role)) throw new UsageError('--role must be all, api or worker');
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
    case 'brands':
      if (sub !== 'create') throw new UsageError('Try: affitrack brands create --name N');
      if (!values.name) throw new UsageError('--name is required');
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
      if (sub !== 'create') throw new UsageError('Try: affitrack users create --brand ID --email E');
      const { brand, email } = values;
      if (!brand || !email) throw new UsageError('--brand and --email are required');
      return withContext(config, async (ctx) => {
        const password = values.password ?? generatePassword();
        let user: Awaited<ReturnType<typeof createUser>>;
        try {
          user = await createUser(ctx, { brandId: brand, email, password });
        } catch (error) {
          if (error instanceof ApiError) throw new UsageError(error.message);
          throw error;
        }
        const generated = values.password === undefined;
        print(
          json,
          { user, ...(generated ? { password } : {}) },
          `Dashboard user ${user.email} created. Sign in at ${config.publicUrl}/dashboard${generated ? ` with password (shown once): ${password}` : ''}`,
        );
      });
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

async function keysCommand(
  config: Config,
  sub: string | undefined,
  arg: string | undefined,
  values: { brand?: string; name?: string; 'rate-limit'?: string },
  json: boolean,
): Promise<void> {
  if (sub === 'revoke') {
    if (!arg) throw new UsageError('Try: affitrack keys revoke KEY_ID');
    return withContext(config, async (ctx) => {
      const row = await revokeApiKey(ctx.db, ctx.clock, arg);
      if (!row) throw new UsageError(`No API key ${arg}`);
      print(json, { key: apiKeyToView(row) }, `Key ${row.id} revoked.`);
    });
  }
  if (sub !== 'create' && sub !== 'list') throw new UsageError('Try: affitrack keys create|list|revoke');
  const brandId = values.brand;
  if (!brandId) throw new UsageError('--brand is required');
  const rateLimitText = values['rate-limit'];
  if (rateLimitText !== undefined && !/^\d+$/.test(rateLimitText)) {
    throw new UsageError('--rate-limit must be a positive integer (requests per minute)');
  }
  return withContext(config, async (ctx) => {
    if (!(await findBrandById(ctx.db.read, brandId))) throw new UsageError(`No brand ${brandId}`);
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

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`affitrack: ${error.message}\n`);
    process.exit(error instanceof UsageError ? 2 : 78);
  }
  process.stderr.write(`affitrack: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
