/**
 * Table shapes as Kysely sees them. Columns are snake_case; timestamps are epoch
 * milliseconds (BIGINT on PostgreSQL, INTEGER on SQLite); money is integer minor units.
 */
import type { ColumnType, Generated } from 'kysely';

export interface BrandTable {
  id: string;
  name: string;
  slug: string;
  timezone: string;
  currency: string;
  fraud_threshold: number;
  auto_ban_high_risk_clicks: number | null;
  auto_ban_window_minutes: number | null;
  created_at: number;
  updated_at: number;
}

export interface ApiKeyTable {
  id: string;
  brand_id: string;
  name: string;
  prefix: string;
  hash: string;
  rate_limit_per_minute: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export type OfferStatus = 'active' | 'paused' | 'archived';
export type ConversionStatus = 'pending' | 'approved' | 'rejected';
export type PartnerStatus = 'applicant' | 'active' | 'banned';

export interface OfferTable {
  id: string;
  brand_id: string;
  name: string;
  destination_url: string;
  status: OfferStatus;
  currency: string;
  revenue_cents: number;
  payout_cents: number;
  conversion_status: 'pending' | 'approved';
  hold_seconds: number | null;
  cap_daily: number | null;
  cap_weekly: number | null;
  cap_monthly: number | null;
  cap_global: number | null;
  fallback_url: string | null;
  /** Token authorising the pixel postback for this offer; null until first asked for. */
  postback_token: string | null;
  created_at: number;
  updated_at: number;
  /** JSON object of the client's string pairs (modules/metadata.ts); '{}' when none. */
  metadata: ColumnType<string, string | undefined, string>;
}

export interface PartnerTable {
  id: string;
  brand_id: string;
  name: string;
  email: string;
  website: string | null;
  status: PartnerStatus;
  ban_reason: string | null;
  created_at: number;
  approved_at: number | null;
  banned_at: number | null;
  updated_at: number;
  /** JSON object of the client's string pairs (modules/metadata.ts); '{}' when none. */
  metadata: ColumnType<string, string | undefined, string>;
}

export interface ConversionTable {
  id: string;
  brand_id: string;
  offer_id: string;
  partner_id: string;
  click_id: string | null;
  status: ConversionStatus;
  revenue_cents: number;
  payout_cents: number;
  currency: string;
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
  external_txn_id: string | null;
  /** 0 or 1 (SQLite has no boolean). */
  cap_exceeded: number;
  /** JSON `[{ cap, periodStart }]` of the cap counters this conversion incremented; null when none. */
  cap_periods: string | null;
  hold_until: number | null;
  approved_at: number | null;
  approved_by: 'manual' | 'hold_expired' | null;
  rejected_at: number | null;
  rejection_reason: string | null;
  /** Brand-local calendar day of creation (YYYY-MM-DD): the report day it counts on. */
  local_day: string;
  /** Brand-local hour of creation ('00'–'23'); null for conversions older than analytics. */
  local_hour: string | null;
  /** Copied from the attributed click; null without one. */
  country: string | null;
  device_type: string | null;
  os: string | null;
  browser: string | null;
  referrer_host: string | null;
  created_at: number;
  /** JSON object of the client's string pairs (modules/metadata.ts); '{}' when none. */
  metadata: ColumnType<string, string | undefined, string>;
}

export interface EventTable {
  id: string;
  brand_id: string;
  type: string;
  /** The full JSON envelope, exactly the bytes every delivery sends. */
  payload: string;
  created_at: number;
  /** 1 for the sample event of a test send (POST /api/public/webhooks/:id/test). */
  test: Generated<number>;
}

/** `parked`: made while its subscription was disabled; waits, unscheduled, until it is enabled again. */
export type DeliveryStatus = 'attempting' | 'retry_scheduled' | 'succeeded' | 'failed' | 'parked';

export interface WebhookSubscriptionTable {
  id: string;
  brand_id: string;
  url: string;
  /** JSON array of event names. */
  events: string;
  /** Signing secret; never returned by the API nor logged. */
  secret: string | null;
  status: 'active' | 'disabled';
  created_at: number;
  updated_at: number;
  /** JSON object of the client's string pairs (modules/metadata.ts); '{}' when none. */
  metadata: ColumnType<string, string | undefined, string>;
  /** Set when deleted: the row stays so its delivery log stays readable (migration 0021). */
  deleted_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** Health (migration 0020): deliveries that ended failed since the last successful attempt. */
  consecutive_failures: Generated<number>;
  /** First failed attempt since the last success; null while healthy. */
  failing_since: number | null;
  last_success_at: number | null;
  last_failure_at: number | null;
  /** Highest auto-disable warning given in this run of failures: 0, 50, 75 or 90 (percent). */
  warned_percent: Generated<number>;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** Sends per second at most; null = unlimited. */
  rate_limit_per_second: number | null;
  /** During a secret rotation: the old secret, also signed with until it expires. Never returned. */
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  /**
   * A rotation made while the previous one lasted: the secret before the previous one, still
   * signing until the time its rotation promised (migration 0037). Never returned.
   */
  older_secret: string | null;
  older_secret_expires_at: number | null;
}

/** Attempts per subscription and hour, for the 24 h success rate (migration 0020). */
export interface WebhookSubscriptionHourTable {
  subscription_id: string;
  /** Start of the hour, epoch ms. */
  hour: number;
  succeeded: number;
  failed: number;
}

/** Next free send slot of a throttled delivery target (`kind:targetId`), shared by every worker. */
export interface DeliveryThrottleTable {
  target_key: string;
  next_slot_at: number;
  /** When a send to the target last started, in any process (null before the first). */
  last_send_at: number | null;
}

export interface WebhookDeliveryTable {
  id: string;
  brand_id: string;
  /** The target kind that made the delivery (modules/deliveries/target.ts): `webhook`, `postback`. */
  kind: string;
  /** The target's id within its kind (a webhook subscription, a postback template). */
  subscription_id: string;
  event_id: string;
  event: string;
  status: DeliveryStatus;
  attempt_count: number;
  /** Attempts made before the current sequence (a redelivery starts a new one). */
  attempt_base: number;
  /** When the next attempt is due; null once the delivery is final. */
  next_attempt_at: number | null;
  lease_until: number | null;
  lease_owner: string | null;
  /** Postbacks: the filled-in URL and HTTP method; null for webhooks (subscription URL, POST). */
  target_url: string | null;
  method: 'GET' | 'POST' | null;
  created_at: number;
  updated_at: number;
  /** Sends since the last recorded attempt (see migration 0010); capped. */
  unrecorded_sends: Generated<number>;
  /** 1 for a test send (never retried, never claimed). */
  test: Generated<number>;
  /** A manual redelivery's one attempt: the status and due time to return to if it fails. */
  resume_status: ColumnType<DeliveryStatus | null, DeliveryStatus | null | undefined, DeliveryStatus | null>;
  resume_at: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface DeliveryWorkerTable {
  id: string;
  heartbeat_at: number;
  started_at: number;
}

export interface PartnerPostbackTable {
  id: string;
  brand_id: string;
  partner_id: string;
  /** null = every offer of the partner (a per-offer template overrides it). */
  offer_id: string | null;
  url: string;
  /** JSON array of conversion event names. */
  events: string;
  created_at: number;
}

export interface WebhookAttemptTable {
  delivery_id: string;
  number: number;
  attempted_at: number;
  status_code: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  /** What was sent (migration 0021); null for attempts recorded before it. Headers are JSON objects. */
  request_url: ColumnType<string | null, string | null | undefined, string | null>;
  request_method: ColumnType<string | null, string | null | undefined, string | null>;
  request_headers: ColumnType<string | null, string | null | undefined, string | null>;
  response_headers: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ClickTable {
  id: string;
  brand_id: string;
  offer_id: string;
  partner_id: string;
  ip: string;
  user_agent: string | null;
  referer: string | null;
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
  fraud_score: number;
  /** JSON array of signal names. */
  fraud_signals: string;
  /** 1 when the score exceeded the brand's threshold at click time. */
  high_risk: number;
  /** Enrichment at click time (modules/analytics/enrichment.ts); null when unknown. */
  country: string | null;
  device_type: string | null;
  os: string | null;
  browser: string | null;
  referrer_host: string | null;
  created_at: number;
}

export interface BlocklistTable {
  id: string;
  brand_id: string;
  type: 'ip' | 'cidr' | 'userAgent';
  value: string;
  created_at: number;
}

export type CapName = 'daily' | 'weekly' | 'monthly' | 'global';

export interface CapCounterTable {
  offer_id: string;
  cap: CapName;
  period_start: number;
  count: number;
}

export interface CapNotificationTable {
  offer_id: string;
  cap: CapName;
  period_start: number;
  created_at: number;
}

export interface DashboardUserTable {
  id: string;
  brand_id: string;
  email: string;
  /** `scrypt$N$r$p$salt$hash` (base64url parts). */
  password_hash: string;
  created_at: number;
  last_login_at: number | null;
}

export interface DashboardSessionTable {
  /** SHA-256 (hex) of the session cookie value. */
  id: string;
  user_id: string;
  brand_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** This deployment's id, one row (migration 0035): Redis keys of rate limits carry it. */
export interface DeploymentTable {
  id: string;
}

/** A key's per-second rate-limit counters, newest first (PostgreSQL without Redis; see http/postgresCounter.ts). */
export interface RateLimitWindowTable {
  key: string;
  counts: number[];
  second: number;
  admitted: number;
}

/**
 * The times of an IP's last clicks on an offer (PostgreSQL only, see fraud/velocity.ts): read
 * by SQL alone, never by this code, so the arrays stay PostgreSQL's.
 */
export interface ClickVelocityTable {
  offer_id: string;
  ip: string;
  earlier: number[];
  latest: number[];
}

export type PayoutStatus = 'created' | 'paid' | 'cancelled';

export interface PayoutRunTable {
  id: string;
  brand_id: string;
  up_to: number;
  /** The partner the run was limited to; '' for every partner. */
  partner_filter: string;
  minimum_cents: number;
  created_at: number;
}

export interface PayoutTable {
  id: string;
  brand_id: string;
  run_id: string;
  partner_id: string;
  currency: string;
  status: PayoutStatus;
  amount_cents: number;
  conversion_count: number;
  up_to: number;
  reference: string | null;
  created_at: number;
  paid_at: number | null;
  /**
   * The partner's payout method and account when the payout was created (migration 0034;
   * payouts paid before it: when marked paid): what the brand pays to. Later changes in the
   * portal do not touch it; the brand cancels and runs again to pay to new details.
   */
  paid_method: string | null;
  paid_account: string | null;
  cancelled_at: number | null;
  updated_at: number;
}

/** A conversion inside a created or paid payout (the primary key: never in two). */
export interface PayoutItemTable {
  conversion_id: string;
  payout_id: string;
  amount_cents: number;
}

export interface PartnerAccountTable {
  partner_id: string;
  brand_id: string;
  /** `scrypt$N$r$p$salt$hash`; null until the partner accepts an invite. */
  password_hash: string | null;
  /**
   * The password's key salted by the partner's e-mail (passwords.ts, lookupKey): what sign-in
   * looks the account up by. Null for a password set before migration 0032, until its next sign-in.
   */
  sign_in_key: string | null;
  payout_method: string | null;
  payout_account: string | null;
  created_at: number;
  updated_at: number;
  last_login_at: number | null;
}

export interface PartnerInviteTable {
  id: string;
  brand_id: string;
  partner_id: string;
  /** SHA-256 (hex) of the invite token; the token is only in the link. */
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface PartnerSessionTable {
  /** SHA-256 (hex) of the session cookie value. */
  id: string;
  partner_id: string;
  brand_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

export interface PartnerApiKeyTable {
  id: string;
  brand_id: string;
  partner_id: string;
  name: string;
  prefix: string;
  hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** One click, or one change of a conversion, as report counters (modules/analytics/facts.ts). */
export interface AnalyticsFactTable {
  id: Generated<number>;
  brand_id: string;
  day: string;
  hour: string | null;
  offer_id: string;
  partner_id: string;
  currency: string;
  country: string | null;
  device_type: string | null;
  os: string | null;
  browser: string | null;
  referrer_host: string | null;
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue_cents: number;
  payout_cents: number;
  /** 1 once the fold job added it to analytics_rollups. */
  folded: Generated<number>;
}

/**
 * Facts summed per attribute value (modules/analytics/fold.ts) and grain (grains.ts: level
 * and span); '' = none, '*' = all offers/partners. Indexed also by value, by offer and by
 * partner (migration 0026), for reports filtered on one of them.
 */
export interface AnalyticsRollupTable {
  brand_id: string;
  dimension: string;
  /** 0: all offers and partners, 1: per offer, 2: per offer and partner (no attribute only), 3: per partner. */
  level: number;
  /** 1: the day `day`; 7: the week starting on Monday `day` (level 0 only). */
  span: number;
  value: string;
  day: string;
  offer_id: string;
  partner_id: string;
  currency: string;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue_cents: number;
  payout_cents: number;
}

/**
 * Facts summed per pair of fixed-vocabulary attributes and brand-local day or week (`span`
 * as in analytics_rollups), over all offers and partners (modules/analytics/fold.ts);
 * `pair` = 'country,deviceType', '' = none.
 */
export interface AnalyticsPairRollupTable {
  brand_id: string;
  pair: string;
  span: number;
  day: string;
  first: string;
  second: string;
  currency: string;
  clicks: number;
  pending: number;
  approved: number;
  rejected: number;
  revenue_cents: number;
  payout_cents: number;
}

export interface IdempotencyKeyTable {
  /** `brand:<id>`, `partner:<id>`, or `ip:<address>` on the public routes that take no key (http/idempotency.ts). */
  scope: string;
  /** SHA-256 of the Idempotency-Key (db/idempotencyAtRest.ts). */
  key: string;
  /** SHA-256 of the method, operation and body: the same key with another request is refused. */
  fingerprint: string;
  status_code: number | null;
  /** The answer, sealed with a key derived from the Idempotency-Key and `scope` (or `sealed_under`). */
  response_body: string | null;
  /** The API key id a key stored before migration 0041 was scoped to, and its answer sealed under; else null. */
  sealed_under: string | null;
  work_committed: number;
  locked_until: number;
  created_at: number;
}

export interface Schema {
  brands: BrandTable;
  api_keys: ApiKeyTable;
  offers: OfferTable;
  partners: PartnerTable;
  conversions: ConversionTable;
  events: EventTable;
  webhook_subscriptions: WebhookSubscriptionTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  delivery_workers: DeliveryWorkerTable;
  webhook_subscription_hours: WebhookSubscriptionHourTable;
  delivery_throttles: DeliveryThrottleTable;
  clicks: ClickTable;
  fraud_blocklist: BlocklistTable;
  cap_counters: CapCounterTable;
  cap_notifications: CapNotificationTable;
  partner_postbacks: PartnerPostbackTable;
  dashboard_users: DashboardUserTable;
  dashboard_sessions: DashboardSessionTable;
  rate_limit_windows: RateLimitWindowTable;
  deployment: DeploymentTable;
  click_velocity: ClickVelocityTable;
  payout_runs: PayoutRunTable;
  payouts: PayoutTable;
  payout_items: PayoutItemTable;
  partner_accounts: PartnerAccountTable;
  partner_invites: PartnerInviteTable;
  partner_sessions: PartnerSessionTable;
  partner_api_keys: PartnerApiKeyTable;
  analytics_facts: AnalyticsFactTable;
  analytics_rollups: AnalyticsRollupTable;
  analytics_pair_rollups: AnalyticsPairRollupTable;
  idempotency_keys: IdempotencyKeyTable;
}
