/** Password hashing with scrypt (node:crypto), parameters stored with each hash. */
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
export const MIN_PASSWORD_LENGTH = 10;
/**
 * Longest password that can be set (dashboard users, portal accounts). A longer one given at
 * sign-in is wrong, never cut to this length and checked: that would open the account with any
 * text that merely starts with the password.
 */
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * The password's key under a salt derived from `context` (an e-mail address) instead of a
 * random one: the same password and context always give the same key, so an account can be
 * found by it (one scrypt, however many accounts share the context). Per context it costs a
 * guesser what a random salt does.
 */
export async function lookupKey(password: string, context: string): Promise<string> {
  const salt = createHash('sha256').update(`affitrack lookup key\0${context}`).digest();
  return (await derive(password, salt, N, R, P)).toString('base64url');
}
