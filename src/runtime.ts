/** Builds and tears down the shared context of a process (API, worker or CLI). */

import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { Database } from './db/database.js';
import { readDeploymentId } from './db/deployment.js';
import { PostgresCounter } from './http/postgresCounter.js';
import { FallbackRateLimiter, MemoryRateLimiter, type RateLimiter } from './http/rateLimit.js';
import { RedisCounter } from './http/redisCounter.js';
import { ApiKeyAuthenticator } from './modules/apiKeys/service.js';
import { DeliveryRegistry } from './modules/deliveries/registry.js';
import { Metrics, metricsEnabled } from './modules/metrics/metrics.js';
import { postbackTarget } from './modules/postbacks/target.js';
import { webhookTarget } from './modules/webhooks/target.js';

/**
 * Log objects are built by our own code, which never puts a key or secret in them; these
 * paths are the safety net for the places a credential could ride along (request headers,
 * a serialized config or subscription). Kept short: pino pays for each path on every line.
 */
const REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'apiKey', 'secret', 'config.databaseUrl'];

export function createLogger(config: Config, destination?: pino.DestinationStream): FastifyBaseLogger {
  return pino(
    { level: config.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    destination ?? pino.destination({ fd: 1, sync: false }),
  ) as FastifyBaseLogger;
}

export interface ContextOverrides {
  clock?: Clock;
  logger?: FastifyBaseLogger;
  db?: Database;
}

export function createContext(config: Config, overrides: ContextOverrides = {}): AppContext {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? createLogger(config);
  const db =
    overrides.db ??
    new Database({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      namedStatements: config.databaseNamedStatements,
    });
  const rateLimiter = createRateLimiter(config, db, clock, logger);
  const authenticator = new ApiKeyAuthenticator(db, clock, (error) =>
    logger.warn({ err: error }, 'could not record API key use'),
  );
  // The delivery engine's target kinds: each feature module says what its deliveries are.
  const deliveries = new DeliveryRegistry([webhookTarget, postbackTarget]);
  const metrics = metricsEnabled(config) ? new Metrics(db, clock, logger) : null;
  const groupCommits = metrics?.groupCommitBatchSize;
  if (groupCommits) db.onGroupCommit((size) => groupCommits.observe(size));
  return { config, db, clock, logger, rateLimiter, authenticator, deliveries, metrics };
}

/**
 * Where rate limits are counted: in Redis when configured; else in PostgreSQL when it is the
 * database (several processes may serve one brand); else (SQLite, one process) in memory.
 * A shared store falls back to this process's memory while it is unreachable.
 */
function createRateLimiter(config: Config, db: Database, clock: Clock, logger: FastifyBaseLogger): RateLimiter {
  const local = new MemoryRateLimiter(clock);
  if (config.redisUrl) {
    const counter = new RedisCounter(config.redisUrl, () => readDeploymentId(db), clock);
    return new FallbackRateLimiter(counter, counter.seededLocal(local), logger);
  }
  if (db.dialect === 'postgres') return new FallbackRateLimiter(new PostgresCounter(db, clock), local, logger);
  return local;
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await ctx.rateLimiter.close();
  await ctx.db.close();
}
