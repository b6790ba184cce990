import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { RateLimiter } from './http/rateLimit.js';
import type { ApiKeyAuthenticator } from './modules/apiKeys/service.js';
import type { DeliveryRegistry } from './modules/deliveries/registry.js';
import type { Metrics } from './modules/metrics/metrics.js';

/** Everything a request handler or job needs, built once at start-up and passed down. */
export interface AppContext {
  config: Config;
  db: Database;
  clock: Clock;
  rateLimiter: RateLimiter;
  authenticator: ApiKeyAuthenticator;
  logger: FastifyBaseLogger;
  /** The delivery engine's registered target kinds and this process's dispatcher, if it runs one. */
  deliveries: DeliveryRegistry;
  /** Prometheus series, or null when GET /metrics is off (METRICS_PORT / METRICS_TOKEN unset): no work then. */
  metrics: Metrics | null;
}
