/**
 * The brand's fraud blocklist: exact IPs, CIDR ranges and user-agent substrings. Each
 * brand's list is compiled into a BlockList once and cached: a change in this process
 * applies at once, one by another process within db/cache.ts's bounds (under a second).
 */
import { BlockList, isIP } from 'node:net';
import type { Selectable } from 'kysely';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { cachedLookup } from '../../db/cache.js';
import type { BlocklistTable } from '../../db/schema.js';
import { InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';

/** Entries per brand at most, so matching stays cheap on the tracking path. */
export const MAX_BLOCKLIST_ENTRIES = 10_000;

export type BlocklistRow = Selectable<BlocklistTable>;

export function blocklistToApi(row: BlocklistRow) {
  return { id: row.id, type: row.type, value: row.value, createdAt: toIso(row.created_at) };
}

interface CompiledBlocklist {
  /** Null when the list has no IP or CIDR entries (checking an empty BlockList still costs). */
  addresses: BlockList | null;
  userAgents: string[];
}

/** Parses `a.b.c.d/nn` or `v6::/nn`; null when it is not a valid CIDR. */
function parseCidr(value: string): { network: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [network, prefixText] = value.split('/');
  if (!network || prefixText === undefined || !/^\d{1,3}$/.test(prefixText)) return null;
  const family = isIP(network);
  const prefix = Number(prefixText);
  if (family === 0 || prefix > (family === 4 ? 32 : 128)) return null;
  return { network, prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
}

function compile(rows: BlocklistRow[]): CompiledBlocklist {
  const addresses = new BlockList();
  let hasAddresses = false;
  const userAgents: string[] = [];
  for (const row of rows) {
    if (row.type !== 'userAgent') hasAddresses = true;
    if (row.type === 'ip') addresses.addAddress(row.value, isIP(row.value) === 6 ? 'ipv6' : 'ipv4');
    else if (row.type === 'cidr') {
      const cidr = parseCidr(row.value);
      if (cidr) addresses.addSubnet(cidr.network, cidr.prefix, cidr.family);
    } else userAgents.push(row.value.toLowerCase());
  }
  return { addresses: hasAddresses ? addresses : null, userAgents };
}

const compiledLists = cachedLookup(async (db, brandId: string) =>
  compile(await db.read.selectFrom('fraud_blocklist').selectAll().where('brand_id', '=', brandId).execute()),
);

export async function isBlocklisted(ctx: AppContext, brandId: string, ip: string, userAgent: string | null) {
  const list = await compiledLists.get(ctx, brandId);
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  if (list.addresses?.check(ip, family)) return true;
  if (!userAgent || list.userAgents.length === 0) return false;
  const ua = userAgent.toLowerCase();
  return list.userAgents.some((needle) => ua.includes(needle));
}

export function listBlocklist(ctx: AppContext, brandId: string, page: { cursor?: string; limit: number }) {
  let query = ctx.db.read.selectFrom('fraud_blocklist').selectAll().where('brand_id', '=', brandId);
  if (page.cursor) query = query.where('id', '<', page.cursor);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

export async function addBlocklistEntry(
  ctx: AppContext,
  brandId: string,
  input: { type: BlocklistRow['type']; value: string },
): Promise<BlocklistRow> {
  const value = input.value.trim();
  const valid =
    input.type === 'ip' ? isIP(value) !== 0 : input.type === 'cidr' ? parseCidr(value) !== null : value.length > 0;
  if (!valid) {
    const expected = {
      ip: 'an IPv4 or IPv6 address',
      cidr: 'a CIDR range such as 203.0.113.0/24',
      userAgent: 'a non-empty substring',
    };
    throw InvalidError.at('value', `must be ${expected[input.type]}`);
  }
  const row = await ctx.db.transact(async (trx) => {
    const count = await trx
      .selectFrom('fraud_blocklist')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('brand_id', '=', brandId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_BLOCKLIST_ENTRIES) {
      // The path names the collection that is full: no field of the body is at fault.
      throw InvalidError.at('blocklist', `a blocklist holds at most ${MAX_BLOCKLIST_ENTRIES} entries`);
    }
    const now = ctx.clock.now();
    const entry: BlocklistRow = { id: newId('blk', now), brand_id: brandId, type: input.type, value, created_at: now };
    await trx.insertInto('fraud_blocklist').values(entry).execute();
    return entry;
  });
  return row;
}

export async function removeBlocklistEntry(ctx: AppContext, brandId: string, id: string): Promise<void> {
  const result = await ctx.db.transact((trx) =>
    trx.deleteFrom('fraud_blocklist').where('id', '=', id).where('brand_id', '=', brandId).executeTakeFirst(),
  );
  if (Number(result.numDeletedRows) === 0) throw new NotFoundError('Blocklist entry');
}
