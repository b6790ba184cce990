/**
 * Spec §5: `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`.
 * The body is hashed as the exact UTF-8 bytes sent.
 */
import { createHmac } from 'node:crypto';

export function computeSignature(secret: string, timestampSeconds: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
}

export function signatureHeader(secret: string, timestampSeconds: number, body: string | Buffer): string {
  return `t=${timestampSeconds},v1=${computeSignature(secret, timestampSeconds, body)}`;
}
