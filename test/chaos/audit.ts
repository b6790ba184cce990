/** Checks afterwards, read straight from the database: deliveries, receipts, the outbox, lost writes. */
import type { ChaosDatabase } from './database.js';
import type { LoadGenerator } from './load.js';
import type { Receiver } from './receiver.js';

export interface DeliveryRow {
  id: string;
  event_id: string;
  subscription_id: string;
  status: string;
  kind: string;
  attempt_count: number;
}

export interface DeliveryAudit {
  events: number;
  deliveries: number;
  /** Deliveries not in a final state. */
  unfinished: DeliveryRow[];
  failed: number;
  /** Events whose deliveries are not exactly one per matching subscription. */
  fanOutProblems: string[];
  /** Deliveries (succeeded) that their receiver never saw answered with 2xx. */
  notReceived: string[];
  /** Repeats that differed from the first receipt (other evt_ id or body bytes) or from the stored event. */
  mismatches: string[];
  /** Receipts beyond the first successful one per wh_ id. */
  duplicates: number;
  /** Receipts in total. */
  received: number;
}

/** Every event's deliveries against the subscriptions, and every receipt against the rows. */
export async function auditDeliveries(db: ChaosDatabase, receivers: Map<string, Receiver>): Promise<DeliveryAudit> {
  const events = await db.query<{ id: string; type: string; payload: string }>('select id, type, payload from events');
  const subscriptions = await db.query<{ id: string; events: string; status: string }>(
    'select id, events, status from webhook_subscriptions',
  );
  const deliveries = (
    await db.query<DeliveryRow>(
      'select id, event_id, subscription_id, status, kind, attempt_count from webhook_deliveries',
    )
  ).map((d) => ({ ...d, attempt_count: Number(d.attempt_count) }));
  const byEvent = new Map<string, DeliveryRow[]>();
  for (const d of deliveries) {
    if (d.kind !== 'webhook') continue;
    const list = byEvent.get(d.event_id) ?? [];
    list.push(d);
    byEvent.set(d.event_id, list);
  }
  const fanOutProblems: string[] = [];
  for (const event of events) {
    const expected = subscriptions
      .filter((s) => s.status === 'active' && (JSON.parse(s.events) as string[]).includes(event.type))
      .map((s) => s.id)
      .sort();
    const actual = (byEvent.get(event.id) ?? []).map((d) => d.subscription_id).sort();
    if (JSON.stringify(expected) !== JSON.stringify(actual)) {
      fanOutProblems.push(`${event.id} (${event.type}): expected ${expected.join(',')} got ${actual.join(',')}`);
    }
  }
  const payloads = new Map(events.map((e) => [e.id, e.payload]));
  const notReceived: string[] = [];
  const mismatches: string[] = [];
  let duplicates = 0;
  let received = 0;
  const known = new Set(deliveries.map((d) => d.id));
  for (const d of deliveries) {
    const receiver = receivers.get(d.subscription_id);
    if (!receiver || d.kind !== 'webhook') continue;
    const receipts = receiver.byWebhookId.get(d.id) ?? [];
    if (d.status === 'succeeded' && !receipts.some((r) => r.status === 200)) notReceived.push(d.id);
    const payload = payloads.get(d.event_id);
    const first = receipts[0];
    for (const r of receipts) {
      if (r.evtId !== d.event_id) mismatches.push(`${d.id}: evt ${r.evtId} instead of ${d.event_id}`);
      else if (first && !r.body.equals(first.body)) mismatches.push(`${d.id}: body differs between attempts`);
      else if (payload !== undefined && r.body.toString('utf8') !== payload) {
        mismatches.push(`${d.id}: body differs from the stored event`);
      }
    }
    const successes = receipts.filter((r) => r.status === 200).length;
    if (successes > 1) duplicates += successes - 1;
  }
  for (const receiver of receivers.values()) {
    received += receiver.receipts.length;
    for (const whId of receiver.byWebhookId.keys()) {
      if (!known.has(whId)) mismatches.push(`received ${whId}, which is no delivery in the database`);
    }
  }
  return {
    events: events.length,
    deliveries: deliveries.length,
    unfinished: deliveries.filter((d) => d.status !== 'succeeded' && d.status !== 'failed'),
    failed: deliveries.filter((d) => d.status === 'failed').length,
    fanOutProblems,
    notReceived,
    mismatches,
    duplicates,
    received,
  };
}

/** How many deliveries are not final yet. */
/** Deliveries not yet final; with `createdBefore` (epoch ms), only those created earlier. */
export async function unfinishedDeliveries(db: ChaosDatabase, createdBefore?: number): Promise<number> {
  const older = createdBefore === undefined ? '' : ` and created_at < ${Math.floor(createdBefore)}`;
  const [row] = await db.query<{ n: number | string }>(
    `select count(*) as n from webhook_deliveries where status not in ('succeeded', 'failed')${older}`,
  );
  return Number(row?.n ?? 0);
}

/** The ids of a table, as a set. */
export async function idsOf(db: ChaosDatabase, table: 'conversions' | 'partners' | 'clicks'): Promise<Set<string>> {
  return new Set((await db.query<{ id: string }>(`select id from ${table}`)).map((r) => r.id));
}

/** Acknowledged writes of `load` that the database does not hold (a ban: the partner is not banned). */
export async function lostWrites(db: ChaosDatabase, load: LoadGenerator['acknowledged']) {
  const banned = new Set(
    (await db.query<{ id: string }>("select id from partners where status = 'banned'")).map((r) => r.id),
  );
  const lost = {
    conversions: missing(load.conversions, await idsOf(db, 'conversions')),
    partners: missing(load.partners, await idsOf(db, 'partners')),
    clicks: missing(load.clicks, await idsOf(db, 'clicks')),
    bans: missing(load.bans, banned),
  };
  const count = lost.conversions.length + lost.partners.length + lost.clicks.length + lost.bans.length;
  return { lost, count };
}

/** Missing members of `expected` in `actual`. */
export function missing(expected: Set<string>, actual: Set<string>): string[] {
  return [...expected].filter((id) => !actual.has(id));
}

/**
 * The transactional outbox: every conversion has exactly one conversion.created, every
 * partner exactly one partner.approved or partner.applied, every banned partner exactly one
 * partner.banned, every high-risk click exactly one fraud.high_risk, and no event names a
 * row that does not exist. Returns the problems.
 */
export async function auditOutbox(db: ChaosDatabase): Promise<string[]> {
  const events = await db.query<{ id: string; type: string; payload: string }>('select id, type, payload from events');
  const counts = new Map<string, number>();
  for (const event of events) {
    const data = (JSON.parse(event.payload) as { data: Record<string, unknown> }).data;
    const subject =
      event.type === 'conversion.created'
        ? `conv:${data.conversionId}`
        : event.type === 'partner.approved' || event.type === 'partner.applied'
          ? `prt:${data.partnerId}`
          : event.type === 'partner.banned'
            ? `ban:${data.partnerId}`
            : event.type === 'fraud.high_risk'
              ? `clk:${data.clickId}`
              : null;
    if (subject) counts.set(subject, (counts.get(subject) ?? 0) + 1);
  }
  const expected = [
    ...(await db.query<{ id: string }>('select id from conversions')).map((r) => `conv:${r.id}`),
    ...(await db.query<{ id: string }>('select id from partners')).map((r) => `prt:${r.id}`),
    ...(await db.query<{ id: string }>("select id from partners where status = 'banned'")).map((r) => `ban:${r.id}`),
    ...(await db.query<{ id: string }>('select id from clicks where high_risk = 1')).map((r) => `clk:${r.id}`),
  ];
  const problems: string[] = [];
  for (const subject of expected) {
    const n = counts.get(subject) ?? 0;
    if (n !== 1) problems.push(`${subject}: ${n} creation events`);
    counts.delete(subject);
  }
  for (const [subject, n] of counts) problems.push(`${subject}: ${n} events for a row that does not exist`);
  return problems;
}
