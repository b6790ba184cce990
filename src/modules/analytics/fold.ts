/**
 * The fold job: claims facts not folded yet, sums them into the rollup rows of every grain
 * (grains.ts: per attribute value at levels 0, 1 and 3, without attribute at level 2 too,
 * per day and — at level 0 — per week; per pair of fixed-vocabulary attributes per day and
 * week) and adds the sums to analytics_rollups and analytics_pair_rollups, in one
 * transaction that also marks the facts folded. Summing a batch in memory first turns
 * thousands of facts into a few thousand upserts, which is why clicks append a fact instead
 * of updating dozens of rollup rows on the tracking link.
 *
 * The fold runs in the server process beside the tracking link, so its per-fact work is kept
 * small: identical facts are summed first under one cheap key, each distinct fact then adds
 * to its rollup sums under small integer keys (no JSON, no object unless the sum is new),
 * and the upserts are two statements whatever the batch holds.
 */
import { type RawBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import { ATTRIBUTE_COLUMN, ATTRIBUTES, PAIRS } from './dimensions.js';
import type { FactRow } from './facts.js';
import {
  ALL,
  DAY_SPAN,
  LEVEL_ALL,
  LEVEL_OFFER,
  LEVEL_OFFER_PARTNER,
  LEVEL_PARTNER,
  type Level,
  WEEK_SPAN,
  weekOf,
} from './grains.js';

/**
 * Facts per transaction: on SQLite the fold holds the only write lock, so a batch must stay
 * short (a few ms) or the tracking link would wait behind it.
 */
export const FOLD_BATCH = 500;
/**
 * How often the worker folds. Reports are exact either way (they add the unfolded facts);
 * folding often keeps that tail, which reports scan, to about a second of traffic.
 */
export const FOLD_INTERVAL_MS = 1000;

const COUNTERS = ['clicks', 'pending', 'approved', 'rejected', 'revenue_cents', 'payout_cents'] as const;
const DIMENSIONS = ['', ...ATTRIBUTES] as const;
const ATTRIBUTE_COLUMNS = ATTRIBUTES.map((a) => ATTRIBUTE_COLUMN[a]);
/** Each pair's attributes as indexes into DIMENSIONS (0 is the empty dimension). */
const PAIR_INDEXES = PAIRS.map(([a, b]) => [DIMENSIONS.indexOf(a), DIMENSIONS.indexOf(b)] as const);
const PAIR_NAMES = PAIRS.map(([a, b]) => `${a},${b}`);

/** Counter sums of one group: clicks, pending, approved, rejected, revenue, payout. */
type Sums = [number, number, number, number, number, number];

interface RollupSum {
  brandId: string;
  dimension: string;
  level: Level;
  span: number;
  day: string;
  offerId: string;
  partnerId: string;
  value: string;
  currency: string;
  sums: Sums;
}

interface PairSum {
  brandId: string;
  pair: string;
  span: number;
  day: string;
  first: string;
  second: string;
  currency: string;
  sums: Sums;
}

function addSums(into: Sums, from: Sums): void {
  for (let i = 0; i < 6; i++) into[i] = (into[i] as number) + (from[i] as number);
}

/**
 * Ids one batch may hand out: each fact adds at most 58 (17 strings with its week, 6
 * contexts, 11 for its distinct key, 12 dimension values, 10 pair values, 2 spare). Two ids
 * combine into one number below 2^30, a small integer that V8 hashes without allocating.
 */
const ID_SPACE = 1 << 15;
const IDS_PER_FACT = 64;
if (FOLD_BATCH * IDS_PER_FACT > ID_SPACE) throw new Error('fold: FOLD_BATCH too large for the id space');

/**
 * Small integer ids for the batch's strings, and for pairs of ids. Every sum below is keyed
 * by such an id — a number, hashed at once — instead of by a key string built and hashed
 * for each of the ~60 sums every fact adds to.
 */
class Ids {
  private readonly strings = new Map<string, number>();
  private readonly pairs = new Map<number, number>();
  private next = 0;

  of(text: string): number {
    let id = this.strings.get(text);
    if (id === undefined) {
      id = this.next++;
      this.strings.set(text, id);
    }
    return id;
  }

  pair(a: number, b: number): number {
    const key = a * ID_SPACE + b;
    let id = this.pairs.get(key);
    if (id === undefined) {
      id = this.next++;
      this.pairs.set(key, id);
    }
    return id;
  }
}

/** Ids of the grains a fact adds to: (brand, day, currency) and its finer levels, and the week. */
interface Contexts {
  all: number;
  offer: number;
  offerPartner: number;
  partner: number;
  week: number;
}

interface DistinctFact {
  fact: FactRow;
  week: string;
  /** Per dimension ('' first, then ATTRIBUTES): the value ('' = none) and its id. */
  values: string[];
  valueIds: number[];
  contexts: Contexts;
  sums: Sums;
}

/**
 * Identical facts (same brand, day, offer, partner, currency and attributes) summed once, so
 * each distinct one is expanded into its ~60 rollup rows once.
 */
function distinctFacts(facts: FactRow[], ids: Ids): Iterable<DistinctFact> {
  const distinct = new Map<number, DistinctFact>();
  const weeks = new Map<string, string>();
  const none = ids.of('');
  for (const fact of facts) {
    const brandId = ids.of(fact.brand_id);
    const currencyId = ids.of(fact.currency);
    const all = ids.pair(ids.pair(brandId, ids.of(fact.day)), currencyId);
    const offer = ids.pair(all, ids.of(fact.offer_id));
    const partnerId = ids.of(fact.partner_id);
    const offerPartner = ids.pair(offer, partnerId);
    let key = offerPartner;
    const values = [''];
    const valueIds = [none];
    for (const column of ATTRIBUTE_COLUMNS) {
      const value = fact[column] ?? '';
      const id = ids.of(value);
      values.push(value);
      valueIds.push(id);
      key = ids.pair(key, id);
    }
    const sums: Sums = [
      Number(fact.clicks),
      Number(fact.pending),
      Number(fact.approved),
      Number(fact.rejected),
      Number(fact.revenue_cents),
      Number(fact.payout_cents),
    ];
    const group = distinct.get(key);
    if (group) {
      addSums(group.sums, sums);
      continue;
    }
    let week = weeks.get(fact.day);
    if (week === undefined) {
      week = weekOf(fact.day);
      weeks.set(fact.day, week);
    }
    // The week's id is of `week/7`: a Monday's day rows and its week's rows are told apart.
    const contexts: Contexts = {
      all,
      offer,
      offerPartner,
      partner: ids.pair(all, ids.pair(none, partnerId)),
      week: ids.pair(ids.pair(brandId, ids.of(`${week}/${WEEK_SPAN}`)), currencyId),
    };
    distinct.set(key, { fact, week, values, valueIds, contexts, sums });
  }
  return distinct.values();
}

/** The sums of a batch, by small integer key (see Ids), and what to add them to. */
class BatchSums {
  readonly rollups = new Map<number, RollupSum>();
  readonly pairs = new Map<number, PairSum>();

  addRollup(key: number, f: DistinctFact, d: number, level: Level, span: number, day: string): void {
    const sum = this.rollups.get(key);
    if (sum) addSums(sum.sums, f.sums);
    else {
      this.rollups.set(key, {
        brandId: f.fact.brand_id,
        dimension: DIMENSIONS[d] as string,
        level,
        span,
        day,
        offerId: level === LEVEL_OFFER || level === LEVEL_OFFER_PARTNER ? f.fact.offer_id : ALL,
        partnerId: level === LEVEL_OFFER_PARTNER || level === LEVEL_PARTNER ? f.fact.partner_id : ALL,
        value: f.values[d] as string,
        currency: f.fact.currency,
        sums: [...f.sums],
      });
    }
  }

  addPair(key: number, f: DistinctFact, p: number, span: number, day: string): void {
    const sum = this.pairs.get(key);
    if (sum) addSums(sum.sums, f.sums);
    else {
      const [a, b] = PAIR_INDEXES[p] as readonly [number, number];
      this.pairs.set(key, {
        brandId: f.fact.brand_id,
        pair: PAIR_NAMES[p] as string,
        span,
        day,
        first: f.values[a] as string,
        second: f.values[b] as string,
        currency: f.fact.currency,
        sums: [...f.sums],
      });
    }
  }
}

/** The batch's sums per rollup row and per pair rollup row. */
export function sumFacts(facts: FactRow[]): { rollups: Map<number, RollupSum>; pairs: Map<number, PairSum> } {
  if (facts.length > FOLD_BATCH) throw new Error(`fold: at most ${FOLD_BATCH} facts at once`);
  const ids = new Ids();
  const batch = new BatchSums();
  for (const f of distinctFacts(facts, ids)) {
    const { all, offer, offerPartner, partner, week } = f.contexts;
    const day = f.fact.day;
    const dimensionValues = f.valueIds.map((id, d) => ids.pair(d, id));
    for (let d = 0; d < DIMENSIONS.length; d++) {
      const value = dimensionValues[d] as number;
      batch.addRollup(all * ID_SPACE + value, f, d, LEVEL_ALL, DAY_SPAN, day);
      batch.addRollup(week * ID_SPACE + value, f, d, LEVEL_ALL, WEEK_SPAN, f.week);
      batch.addRollup(offer * ID_SPACE + value, f, d, LEVEL_OFFER, DAY_SPAN, day);
      if (d === 0) batch.addRollup(offerPartner * ID_SPACE + value, f, d, LEVEL_OFFER_PARTNER, DAY_SPAN, day);
      batch.addRollup(partner * ID_SPACE + value, f, d, LEVEL_PARTNER, DAY_SPAN, day);
    }
    for (let p = 0; p < PAIR_INDEXES.length; p++) {
      const [a, b] = PAIR_INDEXES[p] as readonly [number, number];
      const values = ids.pair(dimensionValues[a] as number, dimensionValues[b] as number);
      batch.addPair(all * ID_SPACE + values, f, p, DAY_SPAN, day);
      batch.addPair(week * ID_SPACE + values, f, p, WEEK_SPAN, f.week);
    }
  }
  return batch;
}

const ROLLUP_COLUMNS = ['brand_id', 'dimension', 'level', 'span', 'day', 'offer_id', 'partner_id', 'value', 'currency'];
const PAIR_ROLLUP_COLUMNS = ['brand_id', 'pair', 'span', 'day', 'first', 'second', 'currency'];
/** PostgreSQL types of the key columns (SQLite takes the JSON values as they come). */
const ROLLUP_TYPES = ['text', 'text', 'integer', 'integer', 'text', 'text', 'text', 'text', 'text'];
const PAIR_ROLLUP_TYPES = ['text', 'text', 'integer', 'text', 'text', 'text', 'text'];

type RollupTable = 'analytics_rollups' | 'analytics_pair_rollups';

/** The SQL adding one row's counters to `table`'s row of the same key, or inserting it. */
function upsertSql(table: RollupTable, keyColumns: string[], source: RawBuilder<unknown>): RawBuilder<unknown> {
  const columns = [...keyColumns, ...COUNTERS];
  return sql`
    insert into ${sql.table(table)} as t (${sql.join(columns.map((c) => sql.ref(c)))})
    ${source}
    on conflict (${sql.join(keyColumns.map((c) => sql.ref(c)))}) do update set
    ${sql.join(COUNTERS.map((c) => sql`${sql.ref(c)} = ${sql.ref(`t.${c}`)} + ${sql.ref(`excluded.${c}`)}`))}`;
}

/**
 * SQLite: one prepared statement run per row, straight on better-sqlite3 inside the write
 * batch (db/prepared.ts) — no SQL built or parsed per batch. Measured on a batch of ~6,700
 * rows: ~7 µs of CPU a row, against ~11 µs for the rows unpacked from one JSON parameter,
 * where each of a row's fifteen columns is a JSON path read of the row's array.
 */
function sqliteUpsert(table: RollupTable, keyColumns: string[]) {
  const arity = keyColumns.length + COUNTERS.length;
  return prepared(arity, (q, ...values: unknown[]) => ({
    compile: () => upsertSql(table, keyColumns, sql`values (${sql.join(values)})`).compile(q),
  }));
}
const SQLITE_UPSERTS = {
  analytics_rollups: sqliteUpsert('analytics_rollups', ROLLUP_COLUMNS),
  analytics_pair_rollups: sqliteUpsert('analytics_pair_rollups', PAIR_ROLLUP_COLUMNS),
};

/**
 * Adds `rows` (key columns, then the six counters) to `table`. On PostgreSQL in ONE
 * statement — the rows travel as one JSON parameter that the database unpacks, one round
 * trip — in key order: two folds upserting the same rows lock them in the same sequence and
 * cannot deadlock. SQLite (one writer at a time, in process) runs a prepared statement a row.
 */
async function upsert(
  trx: Trx,
  dialect: 'sqlite' | 'postgres',
  table: RollupTable,
  keyColumns: string[],
  keyTypes: string[],
  rows: unknown[][],
): Promise<void> {
  if (dialect === 'sqlite') {
    const statement = SQLITE_UPSERTS[table];
    for (const row of rows) await statement.execute(trx, ...row);
    return;
  }
  if (rows.length === 0) return;
  const types = [...keyTypes, ...COUNTERS.map(() => 'bigint')];
  const source = sql`select ${sql.join(types.map((type, i) => sql.raw(`(e ->> ${i})::${type}`)))}
    from json_array_elements(${JSON.stringify(rows)}::json) as e
    order by ${sql.join(keyColumns.map((_, i) => sql.raw(String(i + 1))))}`;
  await upsertSql(table, keyColumns, source).execute(trx);
}

/**
 * Claims up to a batch of unfolded facts, in no particular order: sums do not depend on it.
 * Through the partial index of unfolded facts (migration 0018), which holds only the tail
 * the fold has not reached: ordered by id, the claim was planned as a walk of the whole
 * table in id order past every folded fact (1.2 million at the benchmark's size, ~300 ms a
 * batch on SQLite, most of the fold's cost, growing with the table).
 */
async function claimFacts(trx: Trx, dialect: 'sqlite' | 'postgres'): Promise<FactRow[]> {
  // SKIP LOCKED lets several PostgreSQL workers fold at once, each its own facts; SQLite
  // has one writer at a time anyway.
  const lock = dialect === 'postgres' ? sql`for update skip locked` : sql``;
  const result = await sql<FactRow>`
    update analytics_facts set folded = 1
    where id in (select id from analytics_facts where folded = 0 limit ${FOLD_BATCH} ${lock})
    returning *`.execute(trx);
  return result.rows;
}

/** Folds one batch; returns how many facts it folded. */
export async function foldBatch(ctx: AppContext): Promise<number> {
  const { dialect } = ctx.db;
  return ctx.db.transact(async (trx) => {
    const facts = await claimFacts(trx, dialect);
    if (facts.length === 0) return 0;
    const { rollups, pairs } = sumFacts(facts);
    const rollupRows = [];
    for (const r of rollups.values()) {
      rollupRows.push([
        r.brandId,
        r.dimension,
        r.level,
        r.span,
        r.day,
        r.offerId,
        r.partnerId,
        r.value,
        r.currency,
        ...r.sums,
      ]);
    }
    const pairRows = [];
    for (const p of pairs.values()) {
      pairRows.push([p.brandId, p.pair, p.span, p.day, p.first, p.second, p.currency, ...p.sums]);
    }
    await upsert(trx, dialect, 'analytics_rollups', ROLLUP_COLUMNS, ROLLUP_TYPES, rollupRows);
    await upsert(trx, dialect, 'analytics_pair_rollups', PAIR_ROLLUP_COLUMNS, PAIR_ROLLUP_TYPES, pairRows);
    return facts.length;
  });
}

/** Folds until no fact is left (the worker's periodic step; tests and benchmarks call it too). */
export async function foldFacts(ctx: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const folded = await foldBatch(ctx);
    total += folded;
    if (folded < FOLD_BATCH) return total;
  }
}
