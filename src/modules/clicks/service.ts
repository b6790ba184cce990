/**
 * The tracking click: validate the link, score the click, store it (durably, before the
 * redirect is answered), update the report rollups, fire fraud.high_risk and apply the
 * automation ban rule — then tell the caller where to redirect. A request from this
 * service's own sender is redirected but not recorded.
 */
import { isIP } from 'node:net';
import { sql } from 'kysely';
import { localDay } from '../../calendar.js';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import { newId } from '../../ids.js';
import { loadCountryRanges } from '../analytics/countries.js';
import { enrichClick } from '../analytics/enrichment.js';
import { clickFact, recordClickFact } from '../analytics/facts.js';
import { localHour } from '../analytics/localHour.js';
import type { BrandRow } from '../brands/repository.js';
import { hasCaps, isAnyCapReached } from '../caps/service.js';
import { isOwnSender } from '../deliveries/userAgent.js';
import { recordEvent } from '../events/outbox.js';
import type { FraudSignal } from '../events/schemas.js';
import { isBlocklisted } from '../fraud/blocklist.js';
import { loadDatacenterRanges } from '../fraud/datacenter.js';
import { detectSignals, isHighRisk, scoreSignals, VELOCITY_MAX_CLICKS, VELOCITY_WINDOW_MS } from '../fraud/scoring.js';
import { earlierClicksFromIp, sweepVelocityNowAndThen } from '../fraud/velocity.js';
import { hotBrand, hotOffer, hotPartner } from '../hotRows.js';
import { lockPartnerStatus, type PartnerRow } from '../partners/repository.js';
import { banPartnerInTrx } from '../partners/service.js';
import { headerSafeUrl } from '../urls.js';
import { fillMacros } from './macros.js';
import { clickBatcher } from './postgresBatch.js';
import { type ClickRow, insertClick } from './repository.js';

export interface ClickInput {
  offerId: string;
  partnerId: string;
  /** The client IP as the proxy settings see it (X-Forwarded-For with TRUST_PROXY). */
  ip: string;
  /** The socket's peer address, used when `ip` is not a valid address. */
  socketIp: string;
  userAgent: string | null;
  referer: string | null;
  subs: Array<string | null>;
}

/** High-risk clicks of a partner since `since`, counted up to `limit` (the auto-ban rule's count). */
const recentHighRiskClicks = prepared(3, (q, partnerId: string, since: number, limit: number) =>
  q
    .selectFrom((sub) =>
      sub
        .selectFrom('clicks')
        .select('created_at') // covered by clicks_partner_high_risk_idx (migration 0028)
        .where('partner_id', '=', partnerId)
        // A literal, not a parameter: SQLite uses a partial index only for a query that
        // repeats its condition as written.
        .where('high_risk', '=', sql.lit(1))
        .where('created_at', '>', since)
        .limit(limit)
        .as('recent'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

/** Thrown inside the click's transaction to roll it back: the partner was banned meanwhile. */
class RefusedClick extends Error {}

function nullIfRefused(error: unknown): null {
  if (error instanceof RefusedClick) return null;
  throw error;
}

/** `click` is null when the request was not recorded (the service's own sender, see trackClick). */
export type ClickOutcome = { found: false } | { found: true; location: string; click: ClickRow | null };

/**
 * One spelling per address, so velocity and blocklist matching compare like with like:
 * `::ffff:203.0.113.7` → `203.0.113.7`, IPv6 in canonical compressed lowercase form.
 * Returns null for anything that is not an IP address (e.g. a garbled X-Forwarded-For).
 */
export function normaliseIp(ip: string): string | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  const family = isIP(ip);
  if (family === 4) return ip;
  if (family === 6) return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  return null;
}

export async function trackClick(ctx: AppContext, input: ClickInput): Promise<ClickOutcome> {
  // An id with a NUL character cannot exist (and PostgreSQL cannot even compare it).
  if (input.offerId.includes('\u0000') || input.partnerId.includes('\u0000')) return { found: false };
  // The link's offer, partner and brand change rarely and are read by every click: kept in
  // memory (hotRows.ts).
  const offer = await hotOffer(ctx, input.offerId);
  if (offer?.status !== 'active') return { found: false };
  const [partner, brand] = await Promise.all([
    hotPartner(ctx, offer.brand_id, input.partnerId),
    hotBrand(ctx, offer.brand_id),
  ]);
  if (partner?.status !== 'active' || !brand) return { found: false };
  if (isOwnSender(input.userAgent ?? undefined)) {
    // A webhook or partner postback pointed at this link, under some name or address of this
    // service the save-time check cannot know (targetUrl.ts): recording it would let a
    // partner pad a competitor's clicks (and every retry would add one). The redirect is
    // still answered, as to any visitor, but nothing is stored, so there is no click id.
    return {
      found: true,
      location: locationOf(offer.destination_url, offer.id, partner.id, null, input.subs),
      click: null,
    };
  }

  const ip = normaliseIp(input.ip) ?? normaliseIp(input.socketIp) ?? input.socketIp;
  const [datacenter, blocklisted, countries] = await Promise.all([
    loadDatacenterRanges().then((ranges) => ranges.contains(ip)),
    isBlocklisted(ctx, brand.id, ip, input.userAgent),
    loadCountryRanges(),
  ]);
  const visitor = enrichClick(countries, { ip, userAgent: input.userAgent, referer: input.referer });

  const autoBanRule = brand.auto_ban_high_risk_clicks !== null && brand.auto_ban_window_minutes !== null;
  const botUserAgent = visitor.deviceType === 'bot';
  const scored = (recentClicksFromIp: number) => {
    const detected = detectSignals({ blocklisted, datacenter, botUserAgent, recentClicksFromIp });
    const score = scoreSignals(detected);
    const highRisk = isHighRisk(score, brand.fraud_threshold);
    const signals: FraudSignal[] = highRisk ? ['high_risk_score', ...detected] : detected;
    return { score, highRisk, signals };
  };
  const clickRow = (now: number, fraud: ReturnType<typeof scored>): ClickRow => ({
    id: newId('clk', now),
    brand_id: brand.id,
    offer_id: offer.id,
    partner_id: partner.id,
    ip,
    user_agent: input.userAgent,
    referer: input.referer,
    sub1: input.subs[0] ?? null,
    sub2: input.subs[1] ?? null,
    sub3: input.subs[2] ?? null,
    sub4: input.subs[3] ?? null,
    sub5: input.subs[4] ?? null,
    fraud_score: fraud.score,
    fraud_signals: JSON.stringify(fraud.signals),
    high_risk: fraud.highRisk ? 1 : 0,
    country: visitor.country,
    device_type: visitor.deviceType,
    os: visitor.os,
    browser: visitor.browser,
    referrer_host: visitor.referrerHost,
    created_at: now,
  });
  const factTime = (now: number) => ({
    day: localDay(now, brand.timezone),
    hour: localHour(now, brand.timezone),
    currency: offer.currency,
  });

  let stored: { click: ClickRow; capReached: boolean } | null;
  const withVelocity = ctx.db.batchesWrites ? scored(VELOCITY_MAX_CLICKS) : null;
  if (withVelocity && !withVelocity.highRisk && !hasCaps(offer)) {
    // PostgreSQL, and the click cannot be high risk however often its IP clicked (so no
    // event, no ban) on an offer without caps: its row and its fact are all it writes,
    // batched with the clicks arriving alongside it (postgresBatch.ts).
    const now = ctx.clock.now();
    const row = clickRow(now, scored(0));
    const velocity = { fraud_score: withVelocity.score, fraud_signals: JSON.stringify(withVelocity.signals) };
    const fact = clickFact(row, factTime(now));
    const score = await clickBatcher(ctx.db).store(row, velocity, fact, now - VELOCITY_WINDOW_MS);
    stored = { click: { ...row, ...score }, capReached: false };
  } else {
    stored = await ctx.db
      .transact(async (trx) => {
        const now = ctx.clock.now();
        const fraud = scored(await earlierClicksFromIp(trx, ctx.db.dialect, offer.id, ip, now));
        // A click that may ban its partner re-reads the partner's status under a lock: the read
        // above is outside this transaction, and concurrent clicks (in this or another process)
        // would otherwise all pass it and be redirected after the ban. Only these clicks pay.
        // Refused, the click rolls back, its velocity registration with it.
        if (fraud.highRisk && autoBanRule && (await lockPartnerStatus(trx, ctx.db.dialect, partner.id)) !== 'active') {
          throw new RefusedClick();
        }
        const row = clickRow(now, fraud);
        await insertClick(trx, row);
        await recordClickFact(trx, row, factTime(now));
        if (fraud.highRisk) {
          await recordEvent(ctx, trx, brand.id, 'fraud.high_risk', {
            clickId: row.id,
            offerId: offer.id,
            partnerId: partner.id,
            score: fraud.score,
            threshold: brand.fraud_threshold,
            signals: fraud.signals,
            ip,
            userAgent: input.userAgent,
          });
          await applyAutoBan(ctx, trx, brand, partner, now);
        }
        return { click: row, capReached: await isAnyCapReached(trx, offer, brand.timezone, now) };
      })
      .catch(nullIfRefused);
  }
  if (!stored) return { found: false };
  sweepVelocityNowAndThen(ctx.db, stored.click.created_at);
  const { click, capReached } = stored;

  const target = capReached && offer.fallback_url ? offer.fallback_url : offer.destination_url;
  const subs = [click.sub1, click.sub2, click.sub3, click.sub4, click.sub5];
  return { found: true, location: locationOf(target, offer.id, partner.id, click.id, subs), click };
}

/** Where a click is redirected: `target` with its macros filled (an unrecorded request has no click id). */
function locationOf(
  target: string,
  offerId: string,
  partnerId: string,
  clickId: string | null,
  subs: Array<string | null>,
): string {
  // headerSafeUrl: a template saved before control characters were refused, or with
  // characters beyond Latin-1 (an internationalised path), still makes a valid Location.
  return headerSafeUrl(
    fillMacros(target, {
      click_id: clickId ?? '',
      partner_id: partnerId,
      offer_id: offerId,
      sub1: subs[0] ?? null,
      sub2: subs[1] ?? null,
      sub3: subs[2] ?? null,
      sub4: subs[3] ?? null,
      sub5: subs[4] ?? null,
    }),
  );
}

/**
 * The brand's automation rule: ban a partner once its high-risk clicks within the window
 * reach the configured count (this click included). Off when the brand has no rule.
 */
async function applyAutoBan(ctx: AppContext, trx: Trx, brand: BrandRow, partner: PartnerRow, now: number) {
  const limit = brand.auto_ban_high_risk_clicks;
  const minutes = brand.auto_ban_window_minutes;
  if (limit === null || minutes === null) return;
  const counted = await recentHighRiskClicks.first(trx, partner.id, now - minutes * 60_000, limit);
  if (Number(counted?.n ?? 0) < limit) return;
  const reason = `Automation rule: ${limit} high-risk clicks within ${minutes} minutes`;
  await banPartnerInTrx(ctx, trx, partner, reason, 'automation');
}
