/**
 * Erasing a visitor's personal data on request (issue #20, point 9): the IP address, user
 * agent and referrer of their clicks are blanked, the clicks themselves stay — so every
 * count, report and fraud score computed from them is unchanged (reports read the analytics
 * facts anyway, which hold neither). An erased click shows `ip: ""` and null user agent and
 * referrer.
 */
import { isIP } from 'node:net';
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';

/** Clicks blanked per transaction when erasing by IP: a bot's IP may have many. */
const ERASE_BATCH = 1000;

export type EraseRequest = { clickId?: string; ip?: string };

export async function eraseClicks(ctx: AppContext, brandId: string, input: EraseRequest): Promise<number> {
  const { clickId, ip } = input;
  if ((clickId === undefined) === (ip === undefined)) {
    throw InvalidError.at('', 'give exactly one of clickId or ip');
  }
  if (clickId !== undefined) {
    return ctx.db.transact(async (trx) => {
      const result = await trx
        .updateTable('clicks')
        .set({ ip: '', user_agent: null, referer: null })
        .where('id', '=', clickId)
        .where('brand_id', '=', brandId)
        .where((eb) => eb.or([eb('ip', '<>', ''), eb('user_agent', 'is not', null), eb('referer', 'is not', null)]))
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }
  const address = ip as string;
  if (isIP(address) === 0) throw InvalidError.at('ip', 'must be an IPv4 or IPv6 address');
  if (ctx.db.dialect === 'postgres') {
    // The velocity rows of the address (fraud/velocity.ts) hold it too; without them its
    // next click counts only the clicks still carrying the address, none once erased.
    await ctx.db.transact((trx) =>
      trx
        .deleteFrom('click_velocity')
        .where('offer_id', 'in', trx.selectFrom('offers').select('id').where('brand_id', '=', brandId))
        .where('ip', '=', address)
        .execute(),
    );
  }
  let erased = 0;
  for (;;) {
    const batch = await ctx.db.transact(async (trx) => {
      // By offer, so the (offer_id, ip, created_at) index finds the IP's clicks directly.
      const ids = await trx
        .selectFrom('clicks')
        .select('id')
        .where('offer_id', 'in', trx.selectFrom('offers').select('id').where('brand_id', '=', brandId))
        .where('ip', '=', address)
        .where('brand_id', '=', brandId)
        .limit(ERASE_BATCH)
        .execute();
      if (ids.length === 0) return 0;
      await trx
        .updateTable('clicks')
        .set({ ip: '', user_agent: null, referer: null })
        .where(
          'id',
          'in',
          ids.map((r) => r.id),
        )
        .execute();
      return ids.length;
    });
    erased += batch;
    if (batch < ERASE_BATCH) return erased;
  }
}
