/**
 * Fraud score of a click: 0–100, the sum of the weights of the signals it shows, capped
 * at 100. Explainable by construction — the stored signals are exactly what added up.
 *
 * | signal          | weight | fires when |
 * | --------------- | ------ | ---------- |
 * | blocklist_hit   | 80     | IP, CIDR or user-agent substring on the brand's blocklist |
 * | datacenter_ip   | 50     | the IP belongs to a hosting/cloud network (fraud/datacenter.ts) |
 * | bot_user_agent  | 40     | `isbot` recognises the user agent (or it is missing) |
 * | click_velocity  | 30     | this IP already clicked this offer VELOCITY_MAX_CLICKS times in VELOCITY_WINDOW_MS |
 *
 * With the default threshold of 75 a blocklist hit alone is high risk, a datacenter IP
 * alone is not, a datacenter IP with a bot user agent is.
 */
import type { FraudSignal } from '../events/schemas.js';

export const SIGNAL_WEIGHTS = {
  blocklist_hit: 80,
  datacenter_ip: 50,
  bot_user_agent: 40,
  click_velocity: 30,
} as const satisfies Partial<Record<FraudSignal, number>>;

export const VELOCITY_WINDOW_MS = 60_000;
export const VELOCITY_MAX_CLICKS = 5;

export type ScoredSignal = keyof typeof SIGNAL_WEIGHTS;

export interface ClickEvidence {
  blocklisted: boolean;
  datacenter: boolean;
  /** No User-Agent, or one `isbot` recognises (the enrichment's parsed, cached answer). */
  botUserAgent: boolean;
  recentClicksFromIp: number;
}

export function detectSignals(evidence: ClickEvidence): ScoredSignal[] {
  const signals: ScoredSignal[] = [];
  if (evidence.blocklisted) signals.push('blocklist_hit');
  if (evidence.datacenter) signals.push('datacenter_ip');
  if (evidence.botUserAgent) signals.push('bot_user_agent');
  if (evidence.recentClicksFromIp >= VELOCITY_MAX_CLICKS) signals.push('click_velocity');
  return signals;
}

export function scoreSignals(signals: ScoredSignal[]): number {
  return Math.min(
    100,
    signals.reduce((sum, s) => sum + SIGNAL_WEIGHTS[s], 0),
  );
}

/** High risk means the score strictly exceeds the threshold (equal is not "exceeds"). */
export function isHighRisk(score: number, threshold: number): boolean {
  return score > threshold;
}
