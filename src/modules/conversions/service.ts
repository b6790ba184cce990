/**
 * Conversion rules: attribution, defaults from the offer, the duplicate rule, the start
 * status, hold time, and the pending → approved | rejected moves. Every change updates the
 * report rollups and records its event in the same transaction.
 */
import { sql } from 'kysely';
import { localDay } from '../../calendar.js';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { ConflictError, InvalidError, NotFoundError, type Problem } from '../../errors.js';
import { newId } from '../../ids.js';
import { recordConversionFact } from '../analytics/facts.js';
import { localHour } from '../analytics/localHour.js';
import type { BrandRow } from '../brands/repository.js';
import {
  type CountedPeriod,
  countTowardsCaps,
  hasCaps,
  recordCapsReached,
  uncountFromCaps,
  withCurrentCaps,
} from '../caps/service.js';
import { type ClickRow, findClick } from '../clicks/repository.js';
import { recordEvent } from '../events/outbox.js';
import { hotBrand, hotOfferOfBrand, hotPartner } from '../hotRows.js';
import { metadataText } from '../metadata.js';
import type { OfferRow } from '../offers/repository.js';
import type { PartnerRow } from '../partners/repository.js';
import { assertNotInPayout } from '../payouts/service.js';
import { currencyCode, isCurrencyCode } from '../validation.js';
import { conversionBatcher, OFFER_NOW_CAPPED } from './postgresBatch.js';
import {
  approvedEventData,
  type ConversionRow,
  createdDelta,
  createdEventData,
  findConversion,
  insertConversionOnce,
  type RecordResult,
  rejectedEventData,
} from './repository.js';
import type { CreateConversionBody } from './schemas.js';

/** How a conversion is recorded beyond its body. */
export interface RecordOptions {
  /**
   * Its amounts come from a caller that need not be the brand (the pixel postback, whose URL
   * sits in public pages): it starts pending and waits for a person, as one from a high-risk
   * click does, rather than approve itself.
   */
  needsReview?: boolean;
}

export async function recordConversion(
  ctx: AppContext,
  brandId: string,
  input: CreateConversionBody,
  options: RecordOptions = {},
): Promise<RecordResult> {
  const problems: Problem[] = [];
  if (input.currency !== undefined && !isCurrencyCode(input.currency)) {
    problems.push({ path: 'currency', message: 'must be an ISO 4217 currency code such as USD' });
  }
  problems.push(...partyProblems(input));
  if (problems.length > 0) throw new InvalidError(problems);
  const parties = await partiesOf(ctx, brandId, input);
  const relabelled = relabelledAmountProblems(input.currency, parties.offer, input);
  if (relabelled.length > 0) throw new InvalidError(relabelled);
  // PostgreSQL, on an offer without caps: the conversion writes only its row, its fact, its
  // event and that event's deliveries, batched with the conversions arriving alongside it —
  // unless its batch finds that the offer has caps by now, and hands it back to be counted.
  const batched =
    ctx.db.batchesWrites && !hasCaps(parties.offer)
      ? await conversionBatcher(ctx).record(conversionRow(parties, input, ctx.clock.now(), options))
      : OFFER_NOW_CAPPED;
  const result =
    batched === OFFER_NOW_CAPPED
      ? await ctx.db.transact((trx) => recordConversionInTrx(ctx, trx, parties, input, options))
      : batched;
  // A repeat names the same partner: a transaction id first reported for another partner's
  // click is not this sale's, and answering with that conversion would hide that this one
  // went unrecorded (whoever reports an order number first would take its commission).
  if (!result.created && result.row.partner_id !== parties.partner.id) {
    throw new ConflictError(
      `externalTxnId ${JSON.stringify(input.externalTxnId)} is already recorded on this offer for another partner ` +
        `(${result.row.id}); a repeat must name the same partner.`,
    );
  }
  return result;
}

/** What the amounts of a conversion are called where they were given: the API's fields, or a pixel's parameters. */
export type AmountNames = Record<'revenueCents' | 'payoutCents', string>;

/**
 * The offer's amounts are in its currency: a conversion in another currency gives both of
 * its own rather than have USD 10.00 recorded as JPY 1000. The problems, named by `names`.
 */
export function relabelledAmountProblems(
  currency: string | undefined,
  offer: OfferRow,
  given: { revenueCents?: number; payoutCents?: number },
  names: AmountNames = { revenueCents: 'revenueCents', payoutCents: 'payoutCents' },
): Problem[] {
  if (currency === undefined || currencyCode(currency) === offer.currency) return [];
  return (['revenueCents', 'payoutCents'] as const)
    .filter((field) => given[field] === undefined)
    .map((field) => ({
      path: names[field],
      message: `is required when currency (${currencyCode(currency)}) differs from the offer's (${offer.currency})`,
    }));
}

interface Parties {
  brand: BrandRow;
  offer: OfferRow;
  partner: PartnerRow;
  click: ClickRow | undefined;
}

/**
 * The conversion's brand, offer, partner and click, checked. Read before the transaction:
 * brand, offer and partner from memory like the tracking link's (hotRows.ts), the click (its
 * attribution never changes) from the read connection. Inside the transaction a cache miss
 * would need a second pooled connection on PostgreSQL, which concurrent units could exhaust.
 */
/**
 * Who the conversion is for: a click, or an offer and a partner. The problem names the field
 * that is missing (`partnerId` when only offerId was given), not always clickId. Ids are
 * compared with undefined: the schema refuses "" (http/schemas.ts IdField), and a falsy check
 * would let one through as "not given" if it ever reached here.
 */
function partyProblems(input: CreateConversionBody): Problem[] {
  if (input.clickId !== undefined) return [];
  const hasOffer = input.offerId !== undefined;
  const hasPartner = input.partnerId !== undefined;
  if (hasOffer && hasPartner) return [];
  if (hasOffer) return [{ path: 'partnerId', message: 'is required with offerId when there is no clickId' }];
  if (hasPartner) return [{ path: 'offerId', message: 'is required with partnerId when there is no clickId' }];
  return [{ path: 'clickId', message: 'give clickId, or offerId and partnerId' }];
}

async function partiesOf(ctx: AppContext, brandId: string, input: CreateConversionBody): Promise<Parties> {
  const brand = await hotBrand(ctx, brandId);
  if (!brand) throw new NotFoundError('Brand');
  const click = input.clickId !== undefined ? await findClick(ctx.db.read, brandId, input.clickId) : undefined;
  if (input.clickId !== undefined && !click) throw InvalidError.at('clickId', 'no click with this id');
  if (click && input.offerId !== undefined && input.offerId !== click.offer_id)
    throw InvalidError.at('offerId', 'does not match the click');
  if (click && input.partnerId !== undefined && input.partnerId !== click.partner_id) {
    throw InvalidError.at('partnerId', 'does not match the click');
  }
  const offerId = click?.offer_id ?? (input.offerId as string);
  const partnerId = click?.partner_id ?? (input.partnerId as string);

  const [offer, partner] = await Promise.all([
    hotOfferOfBrand(ctx, brandId, offerId),
    hotPartner(ctx, brandId, partnerId),
  ]);
  if (!offer) throw InvalidError.at('offerId', 'no offer with this id');
  if (offer.status === 'archived') throw InvalidError.at('offerId', 'the offer is archived');
  if (!partner) throw InvalidError.at('partnerId', 'no partner with this id');
  if (partner.status !== 'active') throw InvalidError.at('partnerId', `the partner is ${partner.status}`);
  return { brand, offer, partner, click };
}

/** A new conversion's row, before caps: attributed, with the offer's defaults and its start status. */
function conversionRow(
  { brand, offer, partner, click }: Parties,
  input: CreateConversionBody,
  now: number,
  options: RecordOptions,
): ConversionRow {
  // A conversion from a high-risk click, or one to review, waits for a person: pending, no automatic approval.
  const forReview = click?.high_risk === 1 || options.needsReview === true;
  const status = forReview ? 'pending' : offer.conversion_status;
  const sub = (n: 1 | 2 | 3 | 4 | 5) => input[`sub${n}`] ?? click?.[`sub${n}`] ?? null;
  return {
    id: newId('conv', now),
    brand_id: brand.id,
    offer_id: offer.id,
    partner_id: partner.id,
    click_id: click?.id ?? null,
    status,
    revenue_cents: input.revenueCents ?? offer.revenue_cents,
    payout_cents: input.payoutCents ?? offer.payout_cents,
    currency: input.currency === undefined ? offer.currency : currencyCode(input.currency),
    sub1: sub(1),
    sub2: sub(2),
    sub3: sub(3),
    sub4: sub(4),
    sub5: sub(5),
    external_txn_id: input.externalTxnId ?? null,
    cap_exceeded: 0,
    cap_periods: null,
    // Hold time only means something for conversions that start pending.
    hold_until:
      status === 'pending' && !forReview && offer.hold_seconds !== null ? now + offer.hold_seconds * 1000 : null,
    approved_at: status === 'approved' ? now : null,
    approved_by: null,
    rejected_at: null,
    rejection_reason: null,
    local_day: localDay(now, brand.timezone),
    local_hour: localHour(now, brand.timezone),
    country: click?.country ?? null,
    device_type: click?.device_type ?? null,
    os: click?.os ?? null,
    browser: click?.browser ?? null,
    referrer_host: click?.referrer_host ?? null,
    created_at: now,
    metadata: metadataText(input.metadata),
  };
}

async function recordConversionInTrx(
  ctx: AppContext,
  trx: Trx,
  parties: Parties,
  input: CreateConversionBody,
  options: RecordOptions,
): Promise<RecordResult> {
  const { brand } = parties;
  const brandId = brand.id;
  const offer = await withCurrentCaps(trx, parties.offer);
  const now = ctx.clock.now();
  const row = conversionRow(parties, input, now, options);

  const existing = await insertConversionOnce(trx, row);
  if (existing) return { row: existing, created: false };

  // Over a reached cap the conversion is still recorded, but waits pending and is never
  // approved automatically.
  const caps = await countTowardsCaps(trx, offer, brand.timezone, now);
  if (caps.counted.length > 0) {
    const changes: Partial<ConversionRow> = { cap_periods: JSON.stringify(caps.counted) };
    if (caps.exceeded)
      Object.assign(changes, { cap_exceeded: 1, status: 'pending', approved_at: null, hold_until: null });
    Object.assign(row, changes);
    await trx.updateTable('conversions').set(changes).where('id', '=', row.id).execute();
  }

  await recordConversionFact(trx, row, createdDelta(row));
  await recordEvent(ctx, trx, brandId, 'conversion.created', createdEventData(row), row);
  await recordCapsReached(ctx, trx, brandId, offer.id, caps.reached);
  return { row, created: true };
}

/**
 * Moves a pending conversion to approved or rejected inside `trx`. The update is guarded
 * by `status = 'pending'`, so of two concurrent deciders (two workers, or a worker and a
 * person) exactly one wins; the loser gets null.
 */
async function decideInTrx(
  ctx: AppContext,
  trx: Trx,
  row: ConversionRow,
  decision: { to: 'approved'; by: 'manual' | 'hold_expired' } | { to: 'rejected'; reason: string | null },
): Promise<ConversionRow | null> {
  const now = ctx.clock.now();
  const changes: Partial<ConversionRow> =
    decision.to === 'approved'
      ? { status: 'approved', approved_at: now, approved_by: decision.by }
      : { status: 'rejected', rejected_at: now, rejection_reason: decision.reason };
  const result = await trx
    .updateTable('conversions')
    .set(changes)
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return null;
  const updated = { ...row, ...changes };
  if (decision.to === 'approved') {
    await recordConversionFact(trx, row, { pending: -1, approved: 1 });
    await recordEvent(ctx, trx, row.brand_id, 'conversion.approved', approvedEventData(updated, decision.by), updated);
  } else {
    // Rejected conversions no longer count towards caps, nor towards revenue and payout.
    if (row.cap_periods) await uncountFromCaps(trx, row.offer_id, JSON.parse(row.cap_periods) as CountedPeriod[]);
    const rejected = { pending: -1, rejected: 1, revenueCents: -row.revenue_cents, payoutCents: -row.payout_cents };
    await recordConversionFact(trx, row, rejected);
    await recordEvent(ctx, trx, row.brand_id, 'conversion.rejected', rejectedEventData(updated), updated);
  }
  return updated;
}

export async function approveConversion(ctx: AppContext, brandId: string, id: string): Promise<ConversionRow> {
  return decideManually(ctx, brandId, id, { to: 'approved', by: 'manual' });
}

export async function rejectConversion(
  ctx: AppContext,
  brandId: string,
  id: string,
  reason: string | null,
): Promise<ConversionRow> {
  return decideManually(ctx, brandId, id, { to: 'rejected', reason });
}

async function decideManually(
  ctx: AppContext,
  brandId: string,
  id: string,
  decision: Parameters<typeof decideInTrx>[3],
): Promise<ConversionRow> {
  return ctx.db.transact(async (trx) => {
    const row = await findConversion(trx, brandId, id);
    if (!row) throw new NotFoundError('Conversion');
    // An approved conversion inside a payout gets a refusal that names the payout.
    if (decision.to === 'rejected' && row.status === 'approved') await assertNotInPayout(ctx, trx, brandId, row.id);
    const updated = row.status === 'pending' ? await decideInTrx(ctx, trx, row, decision) : null;
    if (!updated) throw new ConflictError(`Only pending conversions can be ${decision.to}; this one is ${row.status}.`);
    return updated;
  });
}

/** Conversions approved per run of the hold job at most, so one run stays short. */
const HOLD_BATCH = 200;

/**
 * Approves pending conversions whose hold time has passed (never those over a cap, nor those
 * of a partner banned meanwhile: a ban is the brand's verdict, and they wait for a person).
 * Returns how many this call approved; safe to run in several workers at once.
 */
export async function approveExpiredHolds(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const due = await ctx.db.read
    .selectFrom('conversions as c')
    .selectAll('c')
    // A literal, as conversions_held_idx (migration 0029) states it, so SQLite can use it.
    .where('c.status', '=', sql.lit('pending'))
    .where('c.hold_until', '<=', now)
    .where('c.cap_exceeded', '=', 0)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('partners as p')
          .select('p.id')
          .whereRef('p.id', '=', 'c.partner_id')
          .where('p.status', '=', 'active'),
      ),
    )
    .orderBy('c.hold_until')
    .limit(HOLD_BATCH)
    .execute();
  if (due.length === 0) return 0;
  return ctx.db.transact(async (trx) => {
    let approved = 0;
    for (const row of due) {
      if (await decideInTrx(ctx, trx, row, { to: 'approved', by: 'hold_expired' })) approved += 1;
    }
    return approved;
  });
}
