import type { Selectable } from 'kysely';
import { toIso, toIsoOrNull } from '../../clock.js';
import type { Dialect, Queryable, Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { PartnerTable } from '../../db/schema.js';
import { parseMetadata } from '../metadata.js';
import type { Partner } from './schemas.js';

export type PartnerRow = Selectable<PartnerTable>;

export function partnerToApi(row: PartnerRow): Partner {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    website: row.website,
    status: row.status,
    banReason: row.ban_reason,
    createdAt: toIso(row.created_at),
    approvedAt: toIsoOrNull(row.approved_at),
    bannedAt: toIsoOrNull(row.banned_at),
    metadata: parseMetadata(row.metadata),
  };
}

const partnerOfBrand = prepared(2, (q, brandId: string, id: string) =>
  q.selectFrom('partners').selectAll().where('id', '=', id).where('brand_id', '=', brandId),
);

export function findPartner(q: Queryable, brandId: string, id: string): Promise<PartnerRow | undefined> {
  return partnerOfBrand.first(q, brandId, id);
}

/**
 * NO KEY UPDATE: conflicts with another status change (an UPDATE of partners takes the same
 * lock), not with the key-share locks that inserts referencing the partner take, so clicks
 * and conversions of the partner are not held up by it.
 */
const partnerStatusLocked = prepared(1, (q, id: string) =>
  q.selectFrom('partners').select('status').where('id', '=', id).forNoKeyUpdate(),
);
/** SQLite has no row locks: its write transaction already excludes every other writer. */
const partnerStatusInWriteTransaction = prepared(1, (q, id: string) =>
  q.selectFrom('partners').select('status').where('id', '=', id),
);

/**
 * The partner's current status, read inside the caller's write transaction and held there
 * (a row lock on PostgreSQL), so a decision taken on it cannot race another transaction's
 * change of the status.
 */
export async function lockPartnerStatus(
  trx: Trx,
  dialect: Dialect,
  id: string,
): Promise<PartnerRow['status'] | undefined> {
  const query = dialect === 'postgres' ? partnerStatusLocked : partnerStatusInWriteTransaction;
  return (await query.first(trx, id))?.status;
}

export function listPartners(
  q: Queryable,
  brandId: string,
  filter: { status?: string; cursor?: string; limit: number },
): Promise<PartnerRow[]> {
  let query = q.selectFrom('partners').selectAll().where('brand_id', '=', brandId);
  if (filter.status) query = query.where('status', '=', filter.status as PartnerRow['status']);
  if (filter.cursor) query = query.where('id', '<', filter.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}
