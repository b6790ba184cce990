/**
 * PostgreSQL's conversions on offers without caps, stored in batches (db/postgresBatch.ts).
 * Such a conversion writes its row, its report fact, its `conversion.created` event and
 * that event's deliveries — in a transaction of its own, eight round trips and a WAL flush
 * each, which left this stack's socket writes as the bottleneck (~1,000 conversions/s).
 *
 * A batch costs two round trips: the deliveries of all its events are planned with one
 * read per target kind, then one statement (a data-modifying WITH, atomic and committed on
 * its own) inserts the conversions from a JSON array, skipping any whose externalTxnId the
 * offer has already (the unique index decides, as in the transaction). Only the conversions
 * it stored get their facts (summed per attribute set), their events and their deliveries.
 * A skipped one is answered with its earlier twin, as the transaction answers it.
 *
 * "Without caps" is decided from the cached offer, which a PATCH setting a cap may already
 * have changed. So the statement checks again, holding a share lock on the offer rows: a
 * conversion whose offer has caps now is not stored but handed back (OFFER_NOW_CAPPED) for
 * the transaction, which counts it. The PATCH locks the offer row FOR UPDATE before it counts
 * the offer's conversions, so it waits for every batch that passed the check and counts
 * their rows; a batch that reaches the row while the PATCH holds it waits for its commit and
 * then sees the caps (READ COMMITTED re-reads a locked row's newest version). Without the
 * check a batch that read "no caps" before the PATCH but committed after its count was
 * counted by nobody: a cap of 20 let 80 through.
 */
import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { StatementBatcher } from '../../db/postgresBatch.js';
import type { Schema } from '../../db/schema.js';
import { conversionFact, FACT_COLUMNS, FACT_COUNTERS, type FactRow } from '../analytics/facts.js';
import {
  announceCommittedDeliveries,
  DELIVERY_COLUMNS,
  type EventDeliveries,
  planDeliveries,
  settleDeliveries,
} from '../deliveries/fanout.js';
import type { DeliverableEvent } from '../deliveries/target.js';
import { EVENT_COLUMNS, type EventInsert, eventEnvelope } from '../events/outbox.js';
import type { EventData } from '../events/schemas.js';
import {
  CONVERSION_COLUMNS,
  type ConversionRow,
  createdDelta,
  createdEventData,
  earlierTwin,
  type RecordResult,
} from './repository.js';

const LIMITS = { maxBatch: 256, maxInFlight: 4 };

/**
 * A conversion whose offer has caps by the time its batch stores it (set by a PATCH since the
 * offer was read): it must be recorded in a transaction, which counts it (service.ts).
 */
export const OFFER_NOW_CAPPED = 'offer now capped';

/** What one conversion of a batch comes to: its answer, a hand-back, or the error it fails with. */
type Outcome = { ok: true; result: RecordResult | typeof OFFER_NOW_CAPPED } | { ok: false; error: unknown };

interface Pending {
  row: ConversionRow;
  fact: FactRow;
  event: EventInsert;
  data: EventData<'conversion.created'>;
}

const columns = (names: readonly string[], from?: string) =>
  sql.join(names.map((name) => (from ? sql`${sql.ref(from)}.${sql.ref(name)}` : sql.ref(name))));

/**
 * The batch's statement, compiled once. $1: one JSON object per conversion, `{ row, fact,
 * event }`; $2: the deliveries of all the batch's events, as rows. Answers the ids of the
 * conversions it stored (`offer` false) and of the batch's offers still without caps
 * (`offer` true), which it holds share-locked until it commits.
 */
function batchStatement(db: Kysely<Schema>): string {
  const counters = new Set<string>(FACT_COUNTERS);
  const attributes = FACT_COLUMNS.filter((column) => !counters.has(column));
  const sums = FACT_COUNTERS.map((counter) => sql`sum(f.${sql.ref(counter)})`);
  const compiled = sql`
    with input as (
      select value as item from json_array_elements(${''}::json)
    ),
    uncapped as materialized (
      select id from offers
      where id in (select distinct input.item -> 'row' ->> 'offer_id' from input)
        and cap_daily is null and cap_weekly is null and cap_monthly is null and cap_global is null
      order by id
      for share
    ),
    stored as (
      insert into conversions (${columns(CONVERSION_COLUMNS)})
      select ${columns(CONVERSION_COLUMNS, 'c')}
      from input cross join lateral json_populate_record(null::conversions, input.item -> 'row') c
      where c.offer_id in (select id from uncapped)
      on conflict (offer_id, external_txn_id) do nothing
      returning id
    ),
    kept as (
      select input.item from input join stored on stored.id = input.item -> 'row' ->> 'id'
    ),
    facts as (
      insert into analytics_facts (${columns(FACT_COLUMNS)})
      select ${columns(attributes, 'f')}, ${sql.join(sums)}
      from kept cross join lateral json_populate_record(null::analytics_facts, kept.item -> 'fact') f
      group by ${columns(attributes, 'f')}
    ),
    created_events as (
      insert into events (${columns(EVENT_COLUMNS)})
      select ${columns(EVENT_COLUMNS, 'e')}
      from kept cross join lateral json_populate_record(null::events, kept.item -> 'event') e
      returning id
    ),
    deliveries as (
      insert into webhook_deliveries (${columns(DELIVERY_COLUMNS)})
      select ${columns(DELIVERY_COLUMNS, 'd')}
      from json_populate_recordset(null::webhook_deliveries, ${''}::json) d
      join created_events on created_events.id = d.event_id
    )
    select id, false as offer from stored
    union all
    select id, true from uncapped`.compile(db);
  if (compiled.parameters.length !== 2) throw new Error('the conversion batch statement has unexpected parameters');
  return compiled.sql;
}

export class ConversionBatcher {
  private readonly statement: string;
  private readonly batcher = new StatementBatcher((batch: Pending[]) => this.storeOrRetryAlone(batch), LIMITS);

  constructor(private readonly ctx: AppContext) {
    this.statement = batchStatement(ctx.db.standaloneWriter);
  }

  /**
   * Stores a new conversion (built by the service, on an offer that had no caps when read)
   * once its batch commits; OFFER_NOW_CAPPED, storing nothing, if the offer has caps by then.
   */
  async record(row: ConversionRow): Promise<RecordResult | typeof OFFER_NOW_CAPPED> {
    const data = createdEventData(row);
    const envelope = eventEnvelope(this.ctx, row.brand_id, 'conversion.created', data);
    const event: EventInsert = {
      id: envelope.id,
      brand_id: row.brand_id,
      type: envelope.type,
      payload: envelope.payload,
      created_at: envelope.createdAt,
    };
    const outcome = await this.batcher.add({ row, fact: conversionFact(row, createdDelta(row)), event, data });
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /**
   * One failing conversion (or a deadlock: two batches inserting the same externalTxnIds in
   * opposite orders) must not fail the others: a failed batch is stored again one conversion
   * at a time, each answered with its own outcome.
   */
  private async storeOrRetryAlone(batch: Pending[]): Promise<Outcome[]> {
    try {
      return await this.store(batch);
    } catch (error) {
      if (batch.length === 1) return [{ ok: false, error }];
      const outcomes: Outcome[] = [];
      for (const pending of batch) {
        try {
          outcomes.push(...(await this.store([pending])));
        } catch (alone) {
          outcomes.push({ ok: false, error: alone });
        }
      }
      return outcomes;
    }
  }

  /** Stores the batch in one statement; throws when it stored none of it. */
  private async store(batch: Pending[]): Promise<Outcome[]> {
    const { ctx } = this;
    const writer = ctx.db.standaloneWriter;
    const events = batch.map(
      ({ row, event, data }): DeliverableEvent => ({
        id: event.id,
        type: event.type,
        brandId: event.brand_id,
        payload: event.payload,
        createdAt: event.created_at,
        data,
        subject: row,
      }),
    );
    const planned = await planDeliveries(ctx, writer, events);
    const stored = new Set<string>();
    const uncapped = new Set<string>();
    try {
      const items = batch.map(({ row, fact, event }) => ({ row, fact, event }));
      const result = await writer.executeQuery<{ id: string; offer: boolean }>(
        CompiledQuery.raw(this.statement, [
          JSON.stringify(items),
          JSON.stringify(planned.flatMap((deliveries) => deliveries.rows)),
        ]),
      );
      for (const { id, offer } of result.rows) (offer ? uncapped : stored).add(id);
    } catch (error) {
      for (const deliveries of planned) settleDeliveries(ctx, deliveries, false);
      throw error;
    }
    const unleased: string[] = [];
    batch.forEach(({ row }, i) => {
      const deliveries = planned[i] as EventDeliveries;
      const kept = stored.has(row.id);
      settleDeliveries(ctx, deliveries, kept);
      if (kept) unleased.push(...deliveries.unleased);
    });
    if (unleased.length > 0) announceCommittedDeliveries(ctx, unleased);
    return Promise.all(
      batch.map(({ row }): Outcome | Promise<Outcome> => {
        if (stored.has(row.id)) return { ok: true, result: { row, created: true } };
        if (!uncapped.has(row.offer_id)) return { ok: true, result: OFFER_NOW_CAPPED };
        return twinOf(ctx, row);
      }),
    );
  }
}

/**
 * The answer for a conversion the batch skipped: the offer's earlier one with its
 * externalTxnId. Its own outcome: the rest of the batch is committed whatever happens here.
 */
async function twinOf(ctx: AppContext, row: ConversionRow): Promise<Outcome> {
  try {
    const twin = await earlierTwin(ctx.db.read, row);
    if (!twin) throw new Error('a conversion of the batch was neither stored nor a duplicate');
    return { ok: true, result: { row: twin, created: false } };
  } catch (error) {
    return { ok: false, error };
  }
}

const batchers = new WeakMap<AppContext, ConversionBatcher>();

/** The batcher of `ctx` (PostgreSQL only). */
export function conversionBatcher(ctx: AppContext): ConversionBatcher {
  let batcher = batchers.get(ctx);
  if (!batcher) {
    batcher = new ConversionBatcher(ctx);
    batchers.set(ctx, batcher);
  }
  return batcher;
}
