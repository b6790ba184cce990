/** `affitrack serve`: migrate, bootstrap, then run the API and/or the worker until a signal. */

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ListenError } from './cliErrors.js';
import { type Config, DEFAULT_DATA_DIR, localUrl } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { holdServeLock } from './db/serveLock.js';
import { releaseAbandonedClaims } from './http/idempotency.js';
import { loadCountryRanges } from './modules/analytics/countries.js';
import { bootstrapDefaultBrand } from './modules/brands/bootstrap.js';
import { loadDatacenterRanges } from './modules/fraud/datacenter.js';
import { startMetricsServer } from './modules/metrics/routes.js';
import { closeContext, createContext } from './runtime.js';
import { createJobs } from './worker/jobs.js';
import { Worker } from './worker/worker.js';

export type Role = 'all' | 'api' | 'worker';

/** Where a bare `affitrack` command (no PUBLIC_URL, HOST or PORT) believes the server is. */
const DEFAULT_LOCAL_URL = localUrl('127.0.0.1', 3000);

export async function serve(config: Config, role: Role): Promise<void> {
  const ctx = createContext(config);
  let app: FastifyInstance | null = null;
  let metricsServer: Server | null = null;
  let releaseLock = () => {};
  try {
    if (ctx.db.dialect === 'sqlite') releaseLock = holdServeLock(config.dataDir);
    const { applied } = await migrateToLatest(ctx.db);
    if (applied.length > 0) ctx.logger.info({ applied }, 'migrations applied');
    ctx.db.waitForLocksBetweenTries();

    if (role !== 'worker' && ctx.db.dialect === 'sqlite') {
      const released = await releaseAbandonedClaims(ctx);
      if (released > 0) ctx.logger.info({ released }, 'idempotency keys of requests cut off by a crash released');
    }
    if (role !== 'worker') {
      // The IP data every click needs (~1 s of parsing) is read before the port opens: read
      // beside the first requests, it stalled them and everything queued behind them.
      await Promise.all([
        loadDatacenterRanges().catch((error) => ctx.logger.error({ err: error }, 'could not load datacenter ranges')),
        loadCountryRanges().catch((error) => ctx.logger.error({ err: error }, 'could not load country ranges')),
      ]);
      app = await buildApp(ctx);
      // Ready first, so that whatever `listen` throws is about the port.
      await app.ready();
      await app.listen({ port: config.port, host: config.host }).catch((error) => {
        throw new ListenError('PORT', config.port, config.host, error);
      });
      // With PORT=0 the system picked the port: links must carry that one, not 0. The app
      // reads `config.publicUrl` per request, so this one update reaches every page and link.
      const { port } = app.server.address() as AddressInfo;
      if (!config.publicUrlIsExplicit) config.publicUrl = localUrl(config.host, port);
    }
    // A worker-only process has no API port: its metrics need METRICS_PORT.
    metricsServer = await startMetricsServer(ctx).catch((error) => {
      throw new ListenError('METRICS_PORT', config.metricsPort ?? 0, config.host, error);
    });
    // Only once the ports are ours: a key shown by a server that then failed to start would be
    // the one key of the Default brand, printed before an error and easily lost.
    const first = await bootstrapDefaultBrand(ctx);
    if (first) showFirstKey(first.secret, first.brand.id, config, role);
  } catch (error) {
    // The caller prints one line and exits; close what was opened so nothing is left half-done.
    metricsServer?.close();
    await app?.close();
    await closeContext(ctx);
    releaseLock();
    throw error;
  }
  const worker = role === 'api' ? null : new Worker(createJobs(ctx), ctx.logger);
  worker?.start();
  ctx.logger.info({ role, database: ctx.db.dialect, ...(app ? { url: config.publicUrl } : {}) }, 'affitrack started');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    ctx.logger.info({ signal }, 'shutting down: draining requests and jobs');
    // Stop intake first (close waits for in-flight requests), then jobs, then storage.
    await app?.close();
    metricsServer?.close();
    await worker?.stop();
    await closeContext(ctx);
    releaseLock();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/** A value as a POSIX shell reads it back unchanged: bare when safe, else in single quotes. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * The first key is printed once, for a person, and never into the structured log (which
 * goes to stdout, where log shippers would keep it): on the terminal when stdout is one,
 * otherwise on stderr, beside the process's other human-readable messages.
 */
function showFirstKey(apiKey: string, brandId: string, config: Config, role: Role): void {
  const out = process.stdout.isTTY ? process.stdout : process.stderr;
  // A worker serves no HTTP: its own address answers nothing, so only a PUBLIC_URL (where
  // the API servers are) is worth pointing at.
  const apiUrl = role !== 'worker' || config.publicUrlIsExplicit ? config.publicUrl : null;
  // `users create` must open this server's database and print the dashboard URL of its own
  // environment: the command carries whatever of that differs from a bare `affitrack`'s. A
  // DATABASE_URL is not printed (it may hold a password), but named.
  const cliEnv = [
    config.databaseUrl === null && config.dataDir !== path.resolve(DEFAULT_DATA_DIR)
      ? `DATA_DIR=${shellWord(config.dataDir)} `
      : '',
    apiUrl !== null && apiUrl !== DEFAULT_LOCAL_URL ? `PUBLIC_URL=${shellWord(apiUrl)} ` : '',
  ].join('');
  const usersCreate = `${cliEnv}npx affitrack users create --brand ${brandId} --email you@example.com`;
  out.write(
    [
      '',
      '  Affitrack is set up. A "Default" brand was created with this API key (shown once, store it now):',
      '',
      `    ${apiKey}`,
      '',
      apiUrl === null
        ? '  This worker serves no HTTP: try the key on an API server (affitrack serve --role api) on this database.'
        : `  Try: curl -H "Authorization: Bearer ${apiKey}" ${apiUrl}/api/v1/brand`,
      '',
      config.databaseUrl === null
        ? '  To sign in to the dashboard, create a user:'
        : "  To sign in to the dashboard, create a user (with this server's DATABASE_URL set):",
      `    ${usersCreate}`,
      apiUrl === null ? '  then open /dashboard on an API server' : `  then open ${apiUrl}/dashboard`,
      '',
      '',
    ].join('\n'),
  );
}
