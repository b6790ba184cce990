import { randomBytes } from 'node:crypto';

/** Crockford base32: sortable as text, no ambiguous letters. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10; // 48 bits of milliseconds, as in ULID
const RANDOM_BYTES = 10; // 80 bits of randomness

export type IdPrefix = 'brd' | 'key' | 'off' | 'prt' | 'conv' | 'clk' | 'evt' | 'sub' | 'wh' | 'blk' | 'pbk' | 'usr';

/**
 * A prefixed ULID body (`conv_01JD…`): the time part makes ids sort by creation, so the
 * id alone is a stable cursor for "newest first" lists.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < TIME_CHARS; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(RANDOM_BYTES);
  let random = '';
  // 80 bits -> 16 base32 characters, five bits at a time.
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      random += ALPHABET[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${random}`;
}
