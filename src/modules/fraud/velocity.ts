/**
 * The velocity signal's count: how many times the IP already clicked the offer within
 * VELOCITY_WINDOW_MS, counted up to VELOCITY_MAX_CLICKS (only "at least that many" matters,
 * and counting a whole window a bot has flooded would make every click slower than the
 * last). It must be exact under concurrency: a burst is exactly what the signal is for.
 *
 * SQLite: one writer runs every click in turn — a group-commit batch's units one after
 * another in one transaction on one connection — so a count of the clicks table sees every
 * click before it, those of its own batch included.
 *
 * PostgreSQL: clicks of several processes, or of several batches in flight, run at once, and
 * a count of the clicks table misses those not committed yet. So each click registers in a
 * row per offer and IP (`click_velocity`, migration 0038) with an upsert, which queues on
 * the row until the transaction holding it ends and then reads the row as committed: the
 * clicks of one (offer, IP) are serialised, each sees every one registered before it, and
 * clicks of other IPs do not wait. The row keeps only the last VELOCITY_MAX_CLICKS times, so
 * it stays a few dozen bytes however hard an IP clicks. A registration that rolls back (the
 * click was not stored) is undone with it.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Database, Dialect, Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import { VELOCITY_MAX_CLICKS, VELOCITY_WINDOW_MS } from './scoring.js';

const KEPT = sql.lit(VELOCITY_MAX_CLICKS);

/** The last VELOCITY_MAX_CLICKS elements of `array`. */
const lastKept = (array: RawBuilder<unknown>) => sql`(${array})[greatest(cardinality(${array}) - ${KEPT} + 1, 1):]`;

/**
 * Registers clicks, per (offer, IP), from the relation `keys` (offer_id, ip, times: the
 * clicks' times in order, since: the earliest start of their windows), and returns each
 * key's `earlier`: the times of the last clicks registered before these. Keys are locked in
 * one order (offer, IP) by every statement, so two batches sharing keys cannot deadlock.
 *
 * A new row is seeded from the clicks table: after a crash emptied the (unlogged) table, or
 * the sweep removed a row, or during an upgrade, the clicks already stored still count.
 * Concurrent first clicks of a key meet in the primary key: the second waits for the first
 * and then updates its row, as if it had been there.
 */
export function registerClicks(
  keys: RawBuilder<unknown>,
): RawBuilder<{ offer_id: string; ip: string; earlier: number[] }> {
  return sql`
    insert into click_velocity as v (offer_id, ip, earlier, latest)
    select k.offer_id, k.ip, seed.times, ${lastKept(sql`k.times`)}
    from ${keys} k
    cross join lateral (
      select coalesce(array_agg(r.created_at order by r.created_at), '{}') as times
      from (
        select c.created_at from clicks c
        where c.offer_id = k.offer_id and c.ip = k.ip and c.created_at > k.since
        order by c.created_at desc
        limit ${KEPT}
      ) r
    ) seed
    order by k.offer_id, k.ip
    on conflict (offer_id, ip) do update
      set earlier = ${lastKept(sql`v.earlier || v.latest`)}, latest = excluded.latest
    returning v.offer_id, v.ip, v.earlier`;
}

/** `times` elements later than `since`: the registered clicks within a click's window. */
export const withinWindow = (times: RawBuilder<unknown>, since: RawBuilder<unknown>) =>
  sql<number>`(select count(*) from unnest(${times}) as t(at) where t.at > ${since})`;

/** One click registered on its own (PostgreSQL), inside the transaction that stores it. */
const registerOne = prepared(4, (q, offerId: string, ip: string, now: number, since: number) => ({
  compile: () =>
    sql<{ n: number }>`
      with keys (offer_id, ip, times, since) as (
        values (${offerId}::text, ${ip}::text, array[${now}::bigint], ${since}::bigint)
      ),
      registered as (${registerClicks(sql`keys`)})
      select ${withinWindow(sql`registered.earlier`, sql`${since}::bigint`)}::integer as n from registered`.compile(q),
}));

/** SQLite: the IP's recent clicks on the offer, read from clicks_velocity_idx alone. */
const recentClicksFromIp = prepared(3, (q, offerId: string, ip: string, since: number) =>
  q
    .selectFrom((sub) =>
      sub
        .selectFrom('clicks')
        .select('created_at')
        .where('offer_id', '=', offerId)
        .where('ip', '=', ip)
        .where('created_at', '>', since)
        .limit(VELOCITY_MAX_CLICKS)
        .as('recent'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

/**
 * The IP's clicks on the offer within the window before this one (up to VELOCITY_MAX_CLICKS),
 * for a click stored in `trx`. On PostgreSQL the click is registered as well, and the row
 * stays locked until `trx` ends, so run it before anything slow in the transaction.
 */
export async function earlierClicksFromIp(
  trx: Trx,
  dialect: Dialect,
  offerId: string,
  ip: string,
  now: number,
): Promise<number> {
  const since = now - VELOCITY_WINDOW_MS;
  const query =
    dialect === 'postgres'
      ? registerOne.first(trx, offerId, ip, now, since)
      : recentClicksFromIp.first(trx, offerId, ip, since);
  return Number((await query)?.n ?? 0);
}

/**
 * Rows whose last click is this much older than the window count for nothing any more. Twice
 * the window, so a process whose clock runs behind another's cannot lose a row it still needs.
 */
const STALE_AFTER_MS = 2 * VELOCITY_WINDOW_MS;

const deleteStaleRows = prepared(1, (q, before: number) =>
  q.deleteFrom('click_velocity').where(sql<number>`latest[cardinality(latest)]`, '<', before),
);

const nextSweepAt = new WeakMap<Database, number>();

/**
 * PostgreSQL (SQLite has no such rows): about once a window, each process deletes the rows of IPs that have stopped
 * clicking (one-off visitors would otherwise stay for ever), without making the click that
 * triggers it wait. A row updated meanwhile is re-checked by the delete and kept.
 */
export function sweepVelocityNowAndThen(db: Database, now: number): void {
  if (db.dialect !== 'postgres' || now < (nextSweepAt.get(db) ?? 0)) return;
  nextSweepAt.set(db, now + VELOCITY_WINDOW_MS);
  deleteStaleRows.execute(db.standaloneWriter, now - STALE_AFTER_MS).catch(() => {});
}
