/**
 * Receiver-side verification of Affitrack webhooks, following spec §5 step by step:
 *
 * ```ts
 * import { verifyWebhookSignature } from 'affitrack/webhooks';
 * verifyWebhookSignature({ secret, header: req.headers['x-service-signature'], rawBody });
 * ```
 *
 * Returns true, or throws WebhookVerificationError saying why (a missing or empty `secret`
 * included, as Stripe's constructEvent refuses one). Pass the raw body bytes
 * exactly as received: re-serialised JSON will not match. During a secret rotation the header
 * carries two signatures (`t=…,v1=<new>,v1=<old>`); any `v1` matching `secret` is accepted, so
 * the old and the new secret both verify until the old one expires.
 */
import { timingSafeEqual } from 'node:crypto';
import { computeSignature } from './signature.js';

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  secret: string;
  /** The X-Service-Signature header value. */
  header: string | string[] | undefined | null;
  rawBody: string | Buffer | Uint8Array;
  /** Maximum age (and clock skew into the future) of `t`; spec: 5 minutes. */
  toleranceSeconds?: number;
  /** Current time, epoch milliseconds or a Date (default: now). */
  now?: number | Date;
}

export function verifyWebhookSignature({
  secret,
  header,
  rawBody,
  toleranceSeconds = 300,
  now = Date.now(),
}: VerifyOptions): true {
  // An empty or missing secret is a receiver's misconfiguration (an unset variable), never a
  // key: Affitrack signs with 8–256 characters, and an HMAC keyed by "" is one anybody can make.
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new WebhookVerificationError("No webhook secret was given: pass the subscription's signing secret");
  }
  if (typeof header !== 'string' || header.length === 0) {
    throw new WebhookVerificationError('Missing X-Service-Signature header');
  }
  // Step 1: split on commas, then each part on "=", to get t and v1 (several v1 may be sent).
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1') signatures.push(value);
  }
  if (!timestamp || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Signature header has no valid t');
  if (signatures.length === 0) throw new WebhookVerificationError('Signature header has no v1 signature');

  // Step 2: HMAC-SHA256 keyed by the secret over "<t>.<raw body>", lowercase hex.
  const body = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody);
  const expected = Buffer.from(computeSignature(secret, Number(timestamp), body), 'utf8');

  // Step 3: constant-time comparison; a mismatch rejects the request.
  const matched = signatures.some((candidate) => {
    const given = Buffer.from(candidate, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new WebhookVerificationError('Signature does not match');

  // Step 4: replay protection: reject timestamps more than the tolerance away from now.
  const nowSeconds = Math.floor((now instanceof Date ? now.getTime() : now) / 1000);
  const age = nowSeconds - Number(timestamp);
  if (age > toleranceSeconds) throw new WebhookVerificationError('Signature timestamp is too old');
  if (age < -toleranceSeconds) throw new WebhookVerificationError('Signature timestamp is in the future');
  return true;
}

export { computeSignature } from './signature.js';
