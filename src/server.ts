/** `affitrack serve`: migrate, bootstrap, then run the API and/or the worker until a signal. */
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { bootstrapDefaultBrand } from './modules/brands/bootstrap.js';
import { loadDatacenterRanges } from './modules/fraud/datacenter.js';
import { closeContext, createContext } from './runtime.js';
import { createJobs } from './worker/jobs.js';
import { Worker } from './worker/worker.js';

export type Role = 'all' | 'api' | 'worker';

export async function serve(config: Config, role: Role): Promise<void> {
  const ctx = createContext(config);
  const { applied } = await migrateToLatest(ctx.db);
  if (applied.length > 0) ctx.logger.info({ applied }, 'migrations applied');

  const first = await bootstrapDefaultBrand(ctx);
  if (first) showFirstKey(first.secret, first.brand.id, config.publicUrl);

  // Read the datacenter ranges now, so the first click does not wait for them.
  if (role !== 'worker')
    void loadDatacenterRanges().catch((error) => ctx.logger.error({ err: error }, 'could not load datacenter ranges'));
  const app = role === 'worker' ? null : await buildApp(ctx);
  const worker = role === 'api' ? null : new Worker(createJobs(ctx), ctx.logger);
  if (app) await app.listen({ port: config.port, host: config.host });
  worker?.start();
  ctx.logger.info({ role, database: ctx.db.dialect, url: config.publicUrl }, 'affitrack started');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    ctx.logger.info({ signal }, 'shutting down: draining requests and jobs');
    // Stop intake first (close waits for in-flight requests), then jobs, then storage.
    await app?.close();
    await worker?.stop();
    await closeContext(ctx);
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * The first key is printed once, for a person, and never into the structured log (which
 * goes to stdout, where log shippers would keep it): on the terminal when stdout is one,
 * otherwise on stderr, beside the process's other human-readable messages.
 */
function showFirstKey(apiKey: string, brandId: string, publicUrl: string): void {
  const out = process.stdout.isTTY ? process.stdout : process.stderr;
  out.write(
    [
      '',
      '  Affitrack is set up. A "Default" brand was created with this API key (shown once, store it now):',
      '',
      `    ${apiKey}`,
      '',
      `  Try: curl -H "Authorization: Bearer ${apiKey}" ${publicUrl}/api/v1/brand`,
      '',
      '  To sign in to the dashboard, create a user:',
      `    npx affitrack users create --brand ${brandId} --email you@example.com`,
      `  then open ${publicUrl}/dashboard`,
      '',
      '',
    ].join('\n'),
  );
}
