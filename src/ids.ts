import { randomFillSync } from 'node:crypto';

/** Crockford base32: sortable as text, no ambiguous letters. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10; // 48 bits of milliseconds, as in ULID
const RANDOM_BYTES = 10; // 80 bits

export type IdPrefix =
  | 'brd'
  | 'key'
  | 'off'
  | 'prt'
  | 'conv'
  | 'clk'
  | 'evt'
  | 'sub'
  | 'wh'
  | 'blk'
  | 'pbk'
  | 'usr'
  | 'ses'
  | 'pay'
  | 'prun'
  | 'inv'
  | 'pkey';

let lastTime = -1;
const lastRandom = Buffer.alloc(RANDOM_BYTES);
/** `encodeTime(lastTime)`, kept: ids made in one millisecond share it. */
let lastTimeText = '';

/**
 * Random bytes are drawn a few hundred ids at a time: each `randomBytes` call is a crypto
 * job (an async resource, even when synchronous), which cost more than the rest of an id.
 */
const randomPool = Buffer.alloc(RANDOM_BYTES * 400);
let randomPoolUsed = randomPool.length;

function nextRandom(into: Buffer): void {
  if (randomPoolUsed === randomPool.length) {
    randomFillSync(randomPool);
    randomPoolUsed = 0;
  }
  randomPool.copy(into, 0, randomPoolUsed, randomPoolUsed + RANDOM_BYTES);
  randomPoolUsed += RANDOM_BYTES;
}

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function encodeRandom(bytes: Buffer): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  return out;
}

/**
 * A prefixed, monotonic ULID body (`conv_01JD…`). The time part makes ids sort by
 * creation; within one millisecond (or if the clock steps back) the random part is
 * incremented, so ids made by one process always sort in creation order and the id alone
 * is a stable cursor for "newest first" lists.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now > lastTime) {
    lastTime = now;
    lastTimeText = encodeTime(now);
    nextRandom(lastRandom);
  } else {
    for (let i = RANDOM_BYTES - 1; i >= 0; i--) {
      lastRandom[i] = ((lastRandom[i] ?? 0) + 1) & 0xff;
      if (lastRandom[i] !== 0) break;
    }
  }
  return `${prefix}_${lastTimeText}${encodeRandom(lastRandom)}`;
}

/** The smallest id of `prefix` made at `ms`: ids sort by time, so `id >= idAt(…)` is a time bound. */
export function idAt(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(ms)}`;
}

/** The creation time (ms) an id carries (`newId`'s time part), or null when `id` is not one of ours. */
export function timeOfId(id: string): number | null {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_CHARS);
  if (id.indexOf('_') < 0 || body.length !== TIME_CHARS) return null;
  let ms = 0;
  for (const char of body) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return null;
    ms = ms * 32 + digit;
  }
  return ms;
}
