import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { Database, Queryable } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { BrandTable } from '../../db/schema.js';
import type { Brand } from './schemas.js';

export type BrandRow = Selectable<BrandTable>;

export function brandToApi(row: BrandRow): Brand {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    timezone: row.timezone,
    currency: row.currency,
    fraudThreshold: row.fraud_threshold,
    autoBan:
      row.auto_ban_high_risk_clicks !== null && row.auto_ban_window_minutes !== null
        ? { highRiskClicks: row.auto_ban_high_risk_clicks, windowMinutes: row.auto_ban_window_minutes }
        : null,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

const brandById = prepared(1, (q, id: string) => q.selectFrom('brands').selectAll().where('id', '=', id));

export function findBrandById(q: Queryable, id: string): Promise<BrandRow | undefined> {
  return brandById.first(q, id);
}

export async function findBrandBySlug(db: Database, slug: string): Promise<BrandRow | undefined> {
  return db.read.selectFrom('brands').selectAll().where('slug', '=', slug).executeTakeFirst();
}
