/**
 * How an Idempotency-Key and its stored answer sit in the database. An answer may carry a
 * secret that is stored nowhere else in clear (a portal invite link, whose token the invites
 * table keeps only as a hash), so neither the key nor the answer is stored as sent: the row is
 * found by the key's SHA-256, and the answer is sealed with AES-256-GCM under a key derived
 * from the Idempotency-Key and its scope. A copy of the database alone opens no answer; the
 * client that holds the Idempotency-Key (a random one, such as a UUID) can always replay it.
 * Used by http/idempotency.ts and by the migration that converted rows stored before.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const INFO = 'affitrack idempotency answer';

/** The `key` column: the Idempotency-Key's SHA-256 (base64url). */
export function storedKeyOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}

/** The AES-256 key that seals the answers of `key` within `scope`. */
export function sealingKeyOf(scope: string, key: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, scope, INFO, 32));
}

/** `v1.<iv>.<ciphertext>.<tag>`, each base64url. */
export function sealAnswer(sealingKey: Buffer, body: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey, iv);
  const sealed = Buffer.concat([cipher.update(body, 'utf8'), cipher.final()]);
  const parts = [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url'));
  return [VERSION, ...parts].join('.');
}

/** The answer `sealAnswer` sealed, or null when it was not sealed with this key (or was altered). */
export function openAnswer(sealingKey: Buffer, stored: string): string | null {
  const [version, iv, sealed, tag] = stored.split('.');
  if (version !== VERSION || iv === undefined || sealed === undefined || tag === undefined) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
