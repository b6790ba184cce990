/**
 * Table shapes as Kysely sees them. Columns are snake_case; timestamps are epoch
 * milliseconds (BIGINT on PostgreSQL, INTEGER on SQLite); money is integer minor units.
 */
import type { Generated } from 'kysely';

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

export interface MigrationLockRow {
  id: Generated<number>;
}

export interface Schema {
  brands: BrandTable;
  api_keys: ApiKeyTable;
}
