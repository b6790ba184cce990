/**
 * What a feature module registers with the delivery engine: a *target* kind (a brand's
 * webhook subscription, a partner's postback URL). The engine owns everything else — rows,
 * leases, the schedule, sending, the attempt log — and never looks inside a target: it asks
 * the target which deliveries an event makes, which of its targets are paused, and what
 * request to send.
 */
import type { Queryable, Trx } from '../../db/types.js';

/** A target's key across kinds (`kind:targetId`): its lane, its throttle row. */
export const targetKey = (kind: string, targetId: string) => `${kind}:${targetId}`;

/** An event as the engine sees it: its stored envelope and what fan-out matches on. */
export interface DeliverableEvent {
  id: string;
  type: string;
  brandId: string;
  /** The serialised envelope: every attempt of every delivery of the event sends these bytes. */
  payload: string;
  createdAt: number;
  /** The event's `data`, for targets that match on or fill in its fields. */
  data: Readonly<Record<string, unknown>>;
  /**
   * The row the event is about, as the event's transaction writes it, when its maker has it
   * at hand (a conversion's): a target that fills in its fields need not read it again —
   * nor could it, when the event is planned before its row is stored (a batch).
   */
  subject?: Readonly<Record<string, unknown>>;
}

/** One delivery a target wants for an event. */
export interface PlannedDelivery<D> {
  targetId: string;
  /** A request URL fixed when the delivery is made (postbacks fill theirs in); null to let the target decide at send time. */
  requestUrl: string | null;
  method: 'GET' | 'POST' | null;
  /** What `request` needs to send it (URL, secret…), read in the same transaction. */
  details: D;
  /** Keep the delivery `parked` (unscheduled, e.g. its subscription is disabled) instead of sending it. */
  parked?: boolean;
}

/** A delivery the engine is about to send. */
export interface SendableDelivery {
  id: string;
  kind: string;
  targetId: string;
  brandId: string;
  eventId: string;
  event: string;
  payload: string;
  requestUrl: string | null;
  method: 'GET' | 'POST' | null;
  /** Attempts recorded so far (all sequences). */
  attemptCount: number;
  /** Attempts made before the current sequence (a redelivery starts a new one). */
  attemptBase: number;
  /** Sends since the last recorded attempt, this one included. */
  unrecordedSends: number;
  /**
   * A manual redelivery's one attempt: the state to return to if it fails (the scheduled
   * retries go on untouched). Absent for an ordinary attempt.
   */
  resume?: { status: 'retry_scheduled' | 'succeeded' | 'failed'; nextAttemptAt: number | null };
  /** Throttled targets: the send slot reserved for this delivery (epoch ms); waiting for it is no attempt. */
  notBefore?: number;
  /** Throttled targets: the least time between two sends to it (ms), kept also when slots are past. */
  slotGapMs?: number;
}

/** An attempt recorded for a target, as its kind hears of it (DeliveryTarget.recorded). */
export interface RecordedOutcome {
  targetId: string;
  deliveryId: string;
  attemptedAt: number;
  succeeded: boolean;
  /** The attempt ended the delivery as failed (its last scheduled attempt). */
  deliveryFailed: boolean;
}

export interface OutgoingRequest {
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: string | null;
}

/**
 * `D`: the send-time details of one target. `C`: the process context the engine passes to
 * `recorded` (the AppContext; not named here because context.ts imports the registry).
 */
export interface DeliveryTarget<D = unknown, C = unknown> {
  /** Stored in each delivery's `kind` and shown in the delivery log (`webhook`, `postback`). */
  readonly kind: string;
  /**
   * The deliveries each of `events` makes (one list per event, in order), read through `q`:
   * the events' own transaction, or for a batch the statement right before it.
   */
  plan(q: Queryable, events: readonly DeliverableEvent[]): Promise<Array<Array<PlannedDelivery<D>>>>;
  /**
   * Send-time details of these targets; a target left out is paused (its deliveries wait,
   * e.g. a disabled subscription).
   */
  details(q: Queryable, targetIds: string[]): Promise<Map<string, D>>;
  /**
   * Optional: why a target that `details` leaves out is paused, in words an answer refusing to
   * send to it can give (a disabled subscription can be enabled, a deleted one cannot).
   */
  pausedReason?(q: Queryable, targetId: string): Promise<string>;
  /**
   * Optional: which of these targets were removed for good (deleted). The engine ends their
   * waiting deliveries when told of a removal (removal.ts), turns a retry an attempt in
   * flight would schedule into `failed`, and refuses to redeliver to them.
   */
  removed?(q: Queryable, targetIds: string[]): Promise<Set<string>>;
  request(delivery: SendableDelivery, details: D, attemptedAt: number): OutgoingRequest;
  /**
   * Optional: told of the attempts just recorded, inside the transaction that records them
   * (completions are batched, so a kind pays per batch, not per delivery).
   */
  recorded?(ctx: C, trx: Trx, outcomes: RecordedOutcome[]): Promise<void>;
  /** Optional: sends per second at most to the target these details describe; null = unlimited. */
  throttle?(details: D): number | null;
}
