/**
 * Prometheus metrics (issue #20, point 10), built only when GET /metrics is configured
 * (METRICS_PORT or METRICS_TOKEN): with metrics off, `ctx.metrics` is null and every call
 * site is one optional-chaining check. With metrics on, a request costs one histogram
 * observation labelled by its route pattern (never the raw URL, which would make a series
 * per id). Series are listed for dashboards in docs/metrics.md.
 */

import type { FastifyBaseLogger } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';

/** GET /metrics is served only when configured: on its own port, or on the API's behind a token. */
export function metricsEnabled(config: Config): boolean {
  return config.metricsPort !== null || config.metricsToken !== null;
}

export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'affitrack_http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0021, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly deliveryAttempts = new Counter({
    name: 'affitrack_delivery_attempts_total',
    help: 'Recorded delivery attempts by target kind and outcome (succeeded, retry_scheduled, failed).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly firstAttemptDelay = new Histogram({
    name: 'affitrack_delivery_first_attempt_delay_seconds',
    help: "Time from a delivery's creation (in its event's transaction) to the start of its first attempt.",
    labelNames: ['kind'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly rateLimitRejections = new Counter({
    name: 'affitrack_rate_limit_rejections_total',
    help: 'Requests refused with 429 by the rate limiter, by scope (key: an API key; partner_key, portal, postback).',
    labelNames: ['scope'] as const,
    registers: [this.registry],
  });

  /** SQLite only: PostgreSQL has no group commit, so the series would never move there. */
  readonly groupCommitBatchSize: Histogram | null;

  /**
   * The gauges read from the database live in a registry of their own, collected first: when
   * the read fails (a database outage, exactly when the other series matter most), they are
   * left out of the scrape and `affitrack_database_up` says 0, instead of failing the whole
   * scrape as one rejected collect() does (the `pg_up`/`mysql_up` convention of exporters).
   */
  private readonly databaseRegistry = new Registry();

  private readonly databaseUp = new Gauge({
    name: 'affitrack_database_up',
    help: 'Whether this scrape could read the database-backed gauges (1), or not (0: they are left out).',
    registers: [this.registry],
  });

  /** One warning per outage (not per scrape) and one line when the gauges are read again. */
  private outage = false;

  constructor(
    db: Database,
    clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.groupCommitBatchSize =
      db.dialect === 'sqlite'
        ? new Histogram({
            name: 'affitrack_group_commit_batch_size',
            help: 'Units of work committed together by one SQLite group commit (one fsync).',
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
            registers: [this.registry],
          })
        : null;
    // Read from the database at scrape time (one range over the due index), so the figure
    // is the whole deployment's, whichever process is scraped; both gauges share one read.
    let pending: Promise<{ count: number; oldest: number | null }> | null = null;
    const read = () => {
      pending ??= withTimeout(dueDeliveries(db, clock.now()), DATABASE_READ_TIMEOUT_MS).finally(() => {
        pending = null;
      });
      return pending;
    };
    new Gauge({
      name: 'affitrack_deliveries_due',
      help: 'Unfinished deliveries whose next attempt is due now (being sent or waiting for a slot or a worker).',
      registers: [this.databaseRegistry],
      async collect() {
        this.set((await read()).count);
      },
    });
    new Gauge({
      name: 'affitrack_deliveries_oldest_due_age_seconds',
      help: 'How long the longest-waiting due delivery has been due (0 when none is).',
      registers: [this.databaseRegistry],
      async collect() {
        const { oldest } = await read();
        this.set(oldest === null ? 0 : Math.max(0, (clock.now() - oldest) / 1000));
      },
    });
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    let fromDatabase = '';
    try {
      fromDatabase = await this.databaseRegistry.metrics();
      this.databaseUp.set(1);
      if (this.outage) {
        this.outage = false;
        this.log.info('metrics: the database-backed gauges are read again');
      }
    } catch (error) {
      this.databaseUp.set(0);
      if (!this.outage) {
        this.outage = true;
        this.log.warn(
          { err: error },
          'metrics: cannot read the database; affitrack_deliveries_due and _oldest_due_age_seconds are left out until it returns',
        );
      }
    }
    const body = (await this.registry.metrics()) + fromDatabase;
    return { body, contentType: this.registry.contentType };
  }
}

/**
 * How long a scrape waits for the database gauges: well under Prometheus' default 10 s
 * scrape timeout, so a database that does not answer at all (a host gone, packets dropped;
 * the pool waits for a connection without limit) still leaves the other series a scrape.
 */
const DATABASE_READ_TIMEOUT_MS = 2_000;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the database within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

async function dueDeliveries(db: Database, now: number): Promise<{ count: number; oldest: number | null }> {
  const row = await db.read
    .selectFrom('webhook_deliveries')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('next_attempt_at').as('oldest')])
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return {
    count: Number(row?.n ?? 0),
    oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
  };
}
