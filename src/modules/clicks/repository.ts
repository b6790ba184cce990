import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import { prepared, preparedInsert } from '../../db/prepared.js';
import type { ClickTable } from '../../db/schema.js';
import { visitorToApi } from '../analytics/schemas.js';
import type { Click } from './schemas.js';

export type ClickRow = Selectable<ClickTable>;

export function clickToApi(row: ClickRow): Click {
  return {
    id: row.id,
    offerId: row.offer_id,
    partnerId: row.partner_id,
    ip: row.ip,
    userAgent: row.user_agent,
    referer: row.referer,
    sub1: row.sub1,
    sub2: row.sub2,
    sub3: row.sub3,
    sub4: row.sub4,
    sub5: row.sub5,
    fraudScore: row.fraud_score,
    fraudSignals: JSON.parse(row.fraud_signals) as string[],
    highRisk: row.high_risk === 1,
    ...visitorToApi(row),
    createdAt: toIso(row.created_at),
  };
}

const clickOfBrand = prepared(2, (q, brandId: string, id: string) =>
  q.selectFrom('clicks').selectAll().where('id', '=', id).where('brand_id', '=', brandId),
);

export function findClick(q: Queryable, brandId: string, id: string): Promise<ClickRow | undefined> {
  return clickOfBrand.first(q, brandId, id);
}

export function listClicks(
  q: Queryable,
  brandId: string,
  f: { offerId?: string; partnerId?: string; highRisk?: boolean; cursor?: string; limit: number },
): Promise<ClickRow[]> {
  let query = q.selectFrom('clicks').selectAll().where('brand_id', '=', brandId);
  if (f.offerId) query = query.where('offer_id', '=', f.offerId);
  if (f.partnerId) query = query.where('partner_id', '=', f.partnerId);
  if (f.highRisk !== undefined) query = query.where('high_risk', '=', f.highRisk ? 1 : 0);
  if (f.cursor) query = query.where('id', '<', f.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

export const CLICK_COLUMNS = [
  'id',
  'brand_id',
  'offer_id',
  'partner_id',
  'ip',
  'user_agent',
  'referer',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'fraud_score',
  'fraud_signals',
  'high_risk',
  'country',
  'device_type',
  'os',
  'browser',
  'referrer_host',
  'created_at',
] as const satisfies ReadonlyArray<keyof ClickRow>;

const clickInsert = preparedInsert<ClickRow>('clicks', CLICK_COLUMNS);

export async function insertClick(q: Queryable, row: ClickRow): Promise<void> {
  await clickInsert.execute(q, row);
}
