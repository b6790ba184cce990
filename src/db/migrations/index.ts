/**
 * Forward-only, numbered migrations. Each file exports `up` only: a shipped migration is
 * never edited, a change is a new file. Kysely's Migrator runs them in a transaction and,
 * on PostgreSQL, under an advisory lock, so two processes starting at once are safe.
 */
import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_offers_partners_conversions.js';
import * as m0003 from './0003_webhooks.js';
import * as m0004 from './0004_clicks_fraud_caps.js';
import * as m0005 from './0005_postbacks.js';
import * as m0006 from './0006_dashboard.js';
import * as m0007 from './0007_conversion_cap_periods.js';
import * as m0008 from './0008_pending_deliveries_index.js';
import * as m0009 from './0009_rate_limit_windows.js';
import * as m0010 from './0010_deliveries.js';
import * as m0011 from './0011_rollup_slots.js';
import * as m0012 from './0012_payouts.js';
import * as m0013 from './0013_portal.js';
import * as m0014 from './0014_click_analytics.js';
import * as m0015 from './0015_idempotency.js';
import * as m0016 from './0016_metadata.js';
import * as m0017 from './0017_dashboard_indexes.js';
import * as m0018 from './0018_unfolded_facts_index.js';
import * as m0019 from './0019_drop_offer_rollups.js';
import * as m0020 from './0020_webhook_operations.js';
import * as m0021 from './0021_webhook_log.js';
import * as m0022 from './0022_partner_rollups_index.js';
import * as m0023 from './0023_failing_deliveries_index.js';
import * as m0024 from './0024_dashboard_filter_indexes.js';
import * as m0025 from './0025_pair_rollups.js';
import * as m0026 from './0026_rollup_grains.js';
import * as m0027 from './0027_pair_rollup_weeks.js';
import * as m0028 from './0028_high_risk_partner_index.js';
import * as m0029 from './0029_held_conversions_index.js';
import * as m0030 from './0030_throttle_last_send.js';
import * as m0031 from './0031_idempotency_at_rest.js';
import * as m0032 from './0032_partner_sign_in_key.js';
import * as m0033 from './0033_payout_paid_to.js';
import * as m0034 from './0034_payout_details_at_creation.js';
import * as m0035 from './0035_deployment.js';
import * as m0036 from './0036_canonical_time_zones.js';
import * as m0037 from './0037_older_secret.js';
import * as m0038 from './0038_click_velocity.js';
import * as m0039 from './0039_iana_time_zone_names.js';
import * as m0040 from './0040_rate_limit_seconds.js';
import * as m0041 from './0041_idempotency_per_brand.js';

const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_offers_partners_conversions': m0002,
  '0003_webhooks': m0003,
  '0004_clicks_fraud_caps': m0004,
  '0005_postbacks': m0005,
  '0006_dashboard': m0006,
  '0007_conversion_cap_periods': m0007,
  '0008_pending_deliveries_index': m0008,
  '0009_rate_limit_windows': m0009,
  '0010_deliveries': m0010,
  '0011_rollup_slots': m0011,
  '0012_payouts': m0012,
  '0013_portal': m0013,
  '0014_click_analytics': m0014,
  '0015_idempotency': m0015,
  '0016_metadata': m0016,
  '0017_dashboard_indexes': m0017,
  '0018_unfolded_facts_index': m0018,
  '0019_drop_offer_rollups': m0019,
  '0020_webhook_operations': m0020,
  '0021_webhook_log': m0021,
  '0022_partner_rollups_index': m0022,
  '0023_failing_deliveries_index': m0023,
  '0024_dashboard_filter_indexes': m0024,
  '0025_pair_rollups': m0025,
  '0026_rollup_grains': m0026,
  '0027_pair_rollup_weeks': m0027,
  '0028_high_risk_partner_index': m0028,
  '0029_held_conversions_index': m0029,
  '0030_throttle_last_send': m0030,
  '0031_idempotency_at_rest': m0031,
  '0032_partner_sign_in_key': m0032,
  '0033_payout_paid_to': m0033,
  '0034_payout_details_at_creation': m0034,
  '0035_deployment': m0035,
  '0036_canonical_time_zones': m0036,
  '0037_older_secret': m0037,
  '0038_click_velocity': m0038,
  '0039_iana_time_zone_names': m0039,
  '0040_rate_limit_seconds': m0040,
  '0041_idempotency_per_brand': m0041,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
