/**
 * PostgreSQL's ordinary clicks, stored in batches (db/postgresBatch.ts). A click that cannot
 * be high risk, on an offer without caps, writes nothing but its row and its report fact;
 * each commit waits for a WAL flush, and this machine's PostgreSQL flushes a few thousand
 * times a second however small the transaction. A batch's statement inserts its rows from
 * arrays, one fact per distinct attribute set with its click count, and answers each click
 * with the score it was stored with.
 *
 * The velocity signal is counted by the statement itself, per click: the IP's clicks on the
 * offer registered before the batch (by any process, fraud/velocity.ts), plus those ahead of
 * it in the same batch.
 */
import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from '../../db/database.js';
import { StatementBatcher } from '../../db/postgresBatch.js';
import type { Schema } from '../../db/schema.js';
import { FACT_COLUMNS, FACT_COUNTERS, type FactRow } from '../analytics/facts.js';
import { VELOCITY_MAX_CLICKS } from '../fraud/scoring.js';
import { registerClicks, withinWindow } from '../fraud/velocity.js';
import { CLICK_COLUMNS, type ClickRow } from './repository.js';

const LIMITS = { maxBatch: 256, maxInFlight: 4 };

/** Score and signals of a click: stored, or what they become with the velocity signal. */
export interface FraudColumns {
  fraud_score: number;
  fraud_signals: string;
}

const INTEGER_COLUMNS = new Set(['fraud_score', 'high_risk', 'velocity_fraud_score', 'ahead']);
const BIGINT_COLUMNS = new Set<string>(['created_at', 'velocity_since', ...FACT_COUNTERS]);

function arrayType(column: string) {
  return sql.raw(INTEGER_COLUMNS.has(column) ? 'integer[]' : BIGINT_COLUMNS.has(column) ? 'bigint[]' : 'text[]');
}

/** `unnest($1::text[], $2::bigint[], …) as alias(c1, c2, …)`: one array parameter per column. */
function unnest(columns: readonly string[], alias: string) {
  const arrays = columns.map((column) => sql`${[]}::${arrayType(column)}`);
  return sql`unnest(${sql.join(arrays)}) as ${sql.raw(alias)}(${sql.join(columns.map((c) => sql.ref(c)))})`;
}

const VELOCITY_COLUMNS = ['velocity_since', 'velocity_fraud_score', 'velocity_fraud_signals', 'ahead'] as const;

/**
 * The batch's statement, compiled once: its text never changes, only the arrays it is
 * given — the click columns, the velocity columns, then the fact columns, in that order.
 * It registers the batch's clicks per offer and IP first (fraud/velocity.ts), which waits
 * for any batch or transaction of another process still holding one of those rows; each
 * click then counts the clicks registered before the batch within its window, plus those
 * ahead of it in the batch.
 */
function batchStatement(db: Kysely<Schema>): string {
  const chosen = (column: 'fraud_score' | 'fraud_signals') =>
    sql`case when recent.n + i.ahead >= ${sql.lit(VELOCITY_MAX_CLICKS)} then i.${sql.ref(`velocity_${column}`)} else i.${sql.ref(column)} end`;
  const selected = CLICK_COLUMNS.map((column) =>
    column === 'fraud_score' || column === 'fraud_signals' ? chosen(column) : sql`i.${sql.ref(column)}`,
  );
  const compiled = sql`
    with input as (
      select * from ${unnest([...CLICK_COLUMNS, ...VELOCITY_COLUMNS], 'i')}
    ),
    keys as (
      select offer_id, ip, array_agg(created_at order by ahead) as times, min(velocity_since) as since
      from input
      group by offer_id, ip
    ),
    registered as (${registerClicks(sql`keys`)}),
    stored as (
      insert into clicks (${sql.join(CLICK_COLUMNS.map((c) => sql.ref(c)))})
      select ${sql.join(selected)}
      from input i
      join registered v on v.offer_id = i.offer_id and v.ip = i.ip
      cross join lateral (select ${withinWindow(sql`v.earlier`, sql`i.velocity_since`)} as n) recent
      returning id, fraud_score, fraud_signals
    ),
    facts as (
      insert into analytics_facts (${sql.join(FACT_COLUMNS.map((c) => sql.ref(c)))})
      select * from ${unnest(FACT_COLUMNS, 'f')}
    )
    select id, fraud_score, fraud_signals from stored`.compile(db);
  const expected = CLICK_COLUMNS.length + VELOCITY_COLUMNS.length + FACT_COLUMNS.length;
  if (compiled.parameters.length !== expected) throw new Error('the click batch statement has unexpected parameters');
  return compiled.sql;
}

interface Pending {
  row: ClickRow;
  withVelocity: FraudColumns;
  fact: FactRow;
  velocitySince: number;
}

export class ClickBatcher {
  private readonly statement: string;
  private readonly batcher = new StatementBatcher((batch: Pending[]) => this.insert(batch), LIMITS);

  constructor(private readonly db: Kysely<Schema>) {
    this.statement = batchStatement(db);
  }

  /** Stores the click and its fact; resolves with the score stored once it is committed. */
  store(row: ClickRow, withVelocity: FraudColumns, fact: FactRow, velocitySince: number): Promise<FraudColumns> {
    return this.batcher.add({ row, withVelocity, fact, velocitySince });
  }

  private async insert(batch: Pending[]): Promise<FraudColumns[]> {
    const clicks = CLICK_COLUMNS.map((column) => batch.map(({ row }) => row[column]));
    const seen = new Map<string, number>();
    const ahead = batch.map(({ row }) => {
      const key = `${row.offer_id}\n${row.ip}`;
      const earlier = seen.get(key) ?? 0;
      seen.set(key, earlier + 1);
      return earlier;
    });
    const velocity = [
      batch.map((pending) => pending.velocitySince),
      batch.map((pending) => pending.withVelocity.fraud_score),
      batch.map((pending) => pending.withVelocity.fraud_signals),
      ahead,
    ];
    const facts = sumFacts(batch.map((pending) => pending.fact));
    const factValues = FACT_COLUMNS.map((column) => facts.map((fact) => fact[column]));

    const result = await this.db.executeQuery<{ id: string } & FraudColumns>(
      CompiledQuery.raw(this.statement, [...clicks, ...velocity, ...factValues]),
    );
    const stored = new Map(result.rows.map((row) => [row.id, row]));
    return batch.map(({ row }) => {
      const columns = stored.get(row.id);
      if (!columns) throw new Error('the click batch did not return one of its clicks');
      return columns;
    });
  }
}

const COUNTERS: ReadonlySet<string> = new Set(FACT_COUNTERS);
const FACT_ATTRIBUTES = FACT_COLUMNS.filter((column) => !COUNTERS.has(column));

/** Facts with the same attributes become one, their counters summed (the fold sums them anyway). */
function sumFacts(facts: FactRow[]): FactRow[] {
  const byAttributes = new Map<string, FactRow>();
  for (const fact of facts) {
    // JSON keeps null and "" apart, whatever the values hold.
    const key = JSON.stringify(FACT_ATTRIBUTES.map((column) => fact[column]));
    const same = byAttributes.get(key);
    if (!same) byAttributes.set(key, { ...fact });
    else for (const counter of FACT_COUNTERS) same[counter] += fact[counter];
  }
  return [...byAttributes.values()];
}

const batchers = new WeakMap<Database, ClickBatcher>();

/** The batcher of `db` (PostgreSQL only). */
export function clickBatcher(db: Database): ClickBatcher {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new ClickBatcher(db.standaloneWriter);
    batchers.set(db, batcher);
  }
  return batcher;
}
