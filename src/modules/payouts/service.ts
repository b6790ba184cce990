/**
 * Payout runs and the payout lifecycle (created → paid, created → cancelled). A run pays,
 * per partner and currency, the approved conversions approved up to `upTo` that are in no
 * payout yet. Each payout and its event commit in one transaction.
 *
 * A payout keeps the partner's payout details of the moment it was created: what the brand
 * pays to. A partner who changes them afterwards is paid to the new ones only by a payout
 * created after the change (the brand cancels the created payout and runs again).
 *
 * Concurrency: a conversion can only ever be in one created or paid payout — `payout_items`
 * is keyed by conversion. On top of that, runs of one brand are serialised (an advisory
 * lock on PostgreSQL; SQLite's write transaction already excludes other writers), so two
 * concurrent runs never race for the same conversions and a repeated run finds the first.
 */
import { sql } from 'kysely';
import { toIso } from '../../clock.js';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { recordEvent } from '../events/outbox.js';
import type { EventData } from '../events/schemas.js';
import { findPartner } from '../partners/repository.js';
import {
  fillPayout,
  findPayout,
  findRun,
  type PayableGroup,
  type PayoutRow,
  partnerPayoutDetails,
  payableGroups,
  payoutHolding,
  payoutsOfRun,
  runPayingLines,
} from './repository.js';
import type { Preview } from './schemas.js';

export interface RunInput {
  upTo: string;
  partnerId?: string;
  minimumCents?: number;
}

interface ParsedRun {
  upTo: number;
  partnerId?: string;
  minimumCents: number;
}

async function parseRun(
  ctx: AppContext,
  brandId: string,
  input: RunInput,
  where: 'body' | 'query',
): Promise<ParsedRun> {
  const path = (field: string) => (where === 'query' ? `query.${field}` : field);
  const upTo = Date.parse(input.upTo);
  if (Number.isNaN(upTo)) throw new InvalidError([{ path: path('upTo'), message: 'must be an ISO 8601 instant' }]);
  if (upTo > ctx.clock.now()) {
    throw new InvalidError([
      { path: path('upTo'), message: 'must not be in the future: a run pays conversions already approved' },
    ]);
  }
  // Compared with undefined: an empty partnerId is no partner, never "every partner" (the schemas refuse it too).
  if (input.partnerId !== undefined && !(await findPartner(ctx.db.read, brandId, input.partnerId))) {
    throw new InvalidError([{ path: path('partnerId'), message: 'no partner with this id' }]);
  }
  return { upTo, partnerId: input.partnerId, minimumCents: input.minimumCents ?? 0 };
}

function split(groups: PayableGroup[], minimumCents: number) {
  return {
    paid: groups.filter((g) => g.amountCents >= minimumCents && g.amountCents > 0),
    belowMinimum: groups.filter((g) => g.amountCents < minimumCents || g.amountCents === 0),
  };
}

/**
 * A run is identified by `upTo` and partner: a repeat returns it, but a repeat asking for
 * another minimum is refused, since the run it names paid by the first minimum.
 */
function refuseOtherMinimum(existing: { minimum_cents: number }, run: ParsedRun): void {
  if (existing.minimum_cents !== run.minimumCents) {
    throw new ConflictError(
      `A payout run up to ${toIso(run.upTo)} already exists with minimumCents ${existing.minimum_cents}; ` +
        'repeat it with the same values, or choose another upTo.',
    );
  }
}

/**
 * What creating the run would pay, without writing anything. When the run exists, a POST
 * returns it unchanged, so the preview shows what it pays (its payouts, less cancelled ones)
 * rather than what is payable now: after a cancel those conversions are payable again, but
 * only a run with another `upTo` pays them, and listing them here promised money the POST
 * would not pay. For the same reason a preview of an existing run with another minimum is
 * refused as its POST would be (409), rather than listing a run that confirming would not return.
 */
export async function previewRun(ctx: AppContext, brandId: string, input: RunInput): Promise<Preview> {
  const run = await parseRun(ctx, brandId, input, 'query');
  const upTo = toIso(run.upTo);
  const existing = await findRun(ctx.db.read, brandId, run.upTo, run.partnerId ?? '');
  if (existing) {
    refuseOtherMinimum(existing, run);
    return { upTo, alreadyCreated: true, data: await runPayingLines(ctx.db.read, existing.id), belowMinimum: [] };
  }
  const groups = await payableGroups(ctx.db.read, { brandId, upTo: run.upTo, partnerId: run.partnerId });
  const { paid, belowMinimum } = split(groups, run.minimumCents);
  return { upTo, alreadyCreated: false, data: paid, belowMinimum };
}

export interface RunOutcome {
  upTo: number;
  partnerId: string | null;
  minimumCents: number;
  payouts: PayoutRow[];
  /** false when the run existed: a repeat returns it unchanged. */
  created: boolean;
}

/** Serialises payout writes of one brand until `trx` ends (PostgreSQL; SQLite writers are already serial). */
async function lockBrandPayouts(ctx: AppContext, trx: Trx, brandId: string): Promise<void> {
  if (ctx.db.dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(hashtext(${`affitrack-payouts:${brandId}`}))`.execute(trx);
  }
}

export function payoutEventData(row: PayoutRow): EventData<'payout.created'> {
  return {
    payoutId: row.id,
    partnerId: row.partner_id,
    currency: row.currency,
    amountCents: row.amount_cents,
    conversionCount: row.conversion_count,
    upTo: toIso(row.up_to),
    status: 'created',
  };
}

export async function createRun(ctx: AppContext, brandId: string, input: RunInput): Promise<RunOutcome> {
  const run = await parseRun(ctx, brandId, input, 'body');
  const partnerFilter = run.partnerId ?? '';
  return ctx.db.transact(async (trx) => {
    await lockBrandPayouts(ctx, trx, brandId);
    const outcome = { upTo: run.upTo, partnerId: run.partnerId ?? null, minimumCents: run.minimumCents };
    const existing = await findRun(trx, brandId, run.upTo, partnerFilter);
    if (existing) {
      refuseOtherMinimum(existing, run);
      return { ...outcome, payouts: await payoutsOfRun(trx, existing.id), created: false };
    }
    const now = ctx.clock.now();
    const runId = newId('prun', now);
    await trx
      .insertInto('payout_runs')
      .values({
        id: runId,
        brand_id: brandId,
        up_to: run.upTo,
        partner_filter: partnerFilter,
        minimum_cents: run.minimumCents,
        created_at: now,
      })
      .execute();
    const groups = split(
      await payableGroups(trx, { brandId, upTo: run.upTo, partnerId: run.partnerId }),
      run.minimumCents,
    );
    const payouts: PayoutRow[] = [];
    for (const group of groups.paid) {
      // The details it is to be paid to, kept with it from now on: the brand exports the
      // payout and pays to these, and the partner may change them in the meantime.
      const details = await partnerPayoutDetails(trx, group.partnerId);
      const row: PayoutRow = {
        id: newId('pay', now),
        brand_id: brandId,
        run_id: runId,
        partner_id: group.partnerId,
        currency: group.currency,
        status: 'created',
        amount_cents: 0,
        conversion_count: 0,
        up_to: run.upTo,
        reference: null,
        created_at: now,
        paid_at: null,
        paid_method: details.payout_method,
        paid_account: details.payout_account,
        cancelled_at: null,
        updated_at: now,
      };
      await trx.insertInto('payouts').values(row).execute();
      const filled = await fillPayout(
        trx,
        { brandId, upTo: run.upTo, partnerId: group.partnerId },
        group.currency,
        row.id,
      );
      row.amount_cents = filled.amountCents;
      row.conversion_count = filled.conversionCount;
      await trx
        .updateTable('payouts')
        .set({ amount_cents: row.amount_cents, conversion_count: row.conversion_count })
        .where('id', '=', row.id)
        .execute();
      await recordEvent(ctx, trx, brandId, 'payout.created', payoutEventData(row));
      payouts.push(row);
    }
    return { ...outcome, payouts, created: true };
  });
}

async function requirePayout(trx: Trx, brandId: string, id: string): Promise<PayoutRow> {
  const row = await findPayout(trx, brandId, id);
  if (!row) throw new NotFoundError('Payout');
  return row;
}

export async function markPayoutPaid(
  ctx: AppContext,
  brandId: string,
  id: string,
  reference: string | null,
): Promise<PayoutRow> {
  return ctx.db.transact(async (trx) => {
    await lockBrandPayouts(ctx, trx, brandId);
    const row = await requirePayout(trx, brandId, id);
    if (row.status !== 'created') {
      throw new ConflictError(`Only created payouts can be marked paid; this one is ${row.status}.`);
    }
    const now = ctx.clock.now();
    // It keeps the details taken when it was created: those are what the brand paid to.
    const paid = { status: 'paid' as const, paid_at: now, reference, updated_at: now };
    const updated: PayoutRow = { ...row, ...paid };
    await trx.updateTable('payouts').set(paid).where('id', '=', id).execute();
    await recordEvent(ctx, trx, brandId, 'payout.paid', {
      ...payoutEventData(updated),
      status: 'paid',
      paidAt: toIso(now),
      reference,
    });
    return updated;
  });
}

/** Cancels a created payout (fires payout.cancelled): its conversions leave it and are payable again. */
export async function cancelPayout(ctx: AppContext, brandId: string, id: string): Promise<PayoutRow> {
  return ctx.db.transact(async (trx) => {
    await lockBrandPayouts(ctx, trx, brandId);
    const row = await requirePayout(trx, brandId, id);
    if (row.status !== 'created') {
      throw new ConflictError(`Only created payouts can be cancelled; this one is ${row.status}.`);
    }
    const now = ctx.clock.now();
    await trx.deleteFrom('payout_items').where('payout_id', '=', id).execute();
    await trx
      .updateTable('payouts')
      .set({ status: 'cancelled', cancelled_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
    // Told to the brand's systems as payout.created was: a consumer that booked the payout must
    // learn it is withdrawn, or it counts its conversions twice when a later run pays them.
    await recordEvent(ctx, trx, brandId, 'payout.cancelled', {
      ...payoutEventData(row),
      status: 'cancelled',
      cancelledAt: toIso(now),
    });
    return { ...row, status: 'cancelled', cancelled_at: now, updated_at: now };
  });
}

/**
 * Refuses to reject a conversion that a created or paid payout covers (called inside the
 * rejection's transaction): the money is promised or gone, so the payout must be cancelled
 * first. Takes the brand's payout lock, so a concurrent run cannot take it meanwhile.
 */
export async function assertNotInPayout(
  ctx: AppContext,
  trx: Trx,
  brandId: string,
  conversionId: string,
): Promise<void> {
  await lockBrandPayouts(ctx, trx, brandId);
  const holding = await payoutHolding(trx, conversionId);
  if (!holding) return;
  throw new ConflictError(
    holding.status === 'paid'
      ? `This conversion was paid to the partner in payout ${holding.id}; a paid conversion cannot be rejected.`
      : `This conversion is in payout ${holding.id} (created, not yet paid); cancel that payout before rejecting it.`,
  );
}
