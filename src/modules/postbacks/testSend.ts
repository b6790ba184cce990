/**
 * A test send of one partner postback template: filled with plainly fake values and sent
 * once, now, through the delivery engine's sender (time-out, SSRF guard at dial time, capped
 * response body). Not retried and not in the delivery log: the caller shows the outcome at
 * once. Used by the dashboard and by the partner portal.
 */
import type { AppContext } from '../../context.js';
import type { ConversionRow } from '../conversions/repository.js';
import { type AttemptOutcome, Sender } from '../deliveries/sender.js';
import { fillPostbackMacros } from './macros.js';
import { listPostbacks } from './service.js';

/** The values a test send fills the macros with: never a real conversion. */
function sampleConversion(brandId: string, partnerId: string, offerId: string | null, now: number): ConversionRow {
  return {
    id: 'conv_TEST',
    brand_id: brandId,
    offer_id: offerId ?? 'off_TEST',
    partner_id: partnerId,
    click_id: 'clk_TEST',
    status: 'approved',
    revenue_cents: 0,
    payout_cents: 1000,
    currency: 'USD',
    sub1: 'test',
    sub2: null,
    sub3: null,
    sub4: null,
    sub5: null,
    external_txn_id: 'TEST',
    cap_exceeded: 0,
    cap_periods: null,
    hold_until: null,
    approved_at: now,
    approved_by: 'manual',
    rejected_at: null,
    rejection_reason: null,
    local_day: '',
    local_hour: null,
    country: null,
    device_type: null,
    os: null,
    browser: null,
    referrer_host: null,
    metadata: '{}',
    created_at: now,
  };
}

/** Null when the partner has no template `postbackId` (another partner's is null too). */
export async function sendTestPostback(
  ctx: AppContext,
  brandId: string,
  partnerId: string,
  postbackId: string,
): Promise<{ url: string; outcome: AttemptOutcome } | null> {
  const template = (await listPostbacks(ctx, brandId, partnerId)).find((t) => t.id === postbackId);
  if (!template) return null;
  const url = fillPostbackMacros(
    template.url,
    sampleConversion(brandId, partnerId, template.offer_id, ctx.clock.now()),
  );
  const sender = new Sender(ctx.config.webhookTimeoutMs, ctx.config.webhookAllowPrivateNetworks);
  try {
    return { url, outcome: await sender.send({ url, method: 'GET', headers: {}, body: null }) };
  } finally {
    await sender.close();
  }
}
