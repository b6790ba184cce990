/** URL checks shared by offers, webhooks and postbacks: absolute http(s) URLs only. */
export const MAX_URL_LENGTH = 2048;

/** C0 controls and DEL: the URL parser drops some (CR, LF, tab) and a header refuses them all. */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** Why `text` is not an acceptable http(s) URL, or null when it is. */
export function httpUrlProblem(text: string): string | null {
  if (hasControlCharacter(text)) return 'must not contain control characters (line breaks, tabs…)';
  if (text.length > MAX_URL_LENGTH) return `must be an absolute http(s) URL of at most ${MAX_URL_LENGTH} characters`;
  try {
    const url = new URL(text);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '') return null;
  } catch {
    // not a URL at all
  }
  return 'must be an absolute http(s) URL';
}

export function isHttpUrl(text: string): boolean {
  return httpUrlProblem(text) === null;
}

/**
 * Whether a URL template fills its host from a macro. Macros may fill the path and query
 * only: a host taken from a visitor's sub-id would make a tracking link an open redirect,
 * and a postback's host is what the SSRF guard checks. `url` must be an http(s) URL.
 */
export function hasHostMacro(url: string): boolean {
  return /[{}]|%7b|%7d/i.test(new URL(url).hostname);
}

export const HOST_MACRO_PROBLEM = 'macros are allowed in the path and query only';

/**
 * `https:/shop.example` parses here as `https://shop.example/`, but a browser redirected to it
 * resolves it against the tracking link's host: a template spells out its `//`.
 */
const SCHEME_AND_SLASHES = /^https?:\/\//i;

/** Whether `text` can be a URL template (an offer's destination, a postback): see hasHostMacro. */
export function isHttpUrlTemplate(text: string): boolean {
  return SCHEME_AND_SLASHES.test(text) && isHttpUrl(text) && !hasHostMacro(text);
}

const UNSAFE_IN_HEADER = /[^\x21-\x7e]/u;
const UNSAFE_IN_HEADER_ALL = /[^\x21-\x7e]/gu;

const percentEncoded = (character: string): string =>
  Array.from(Buffer.from(character, 'utf8'), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/**
 * `url` with every character outside printable ASCII percent-encoded as UTF-8 (a lone
 * surrogate as U+FFFD), ready for a Location header: Node refuses controls and characters
 * above U+00FF there, and browsers decode the escapes back (internationalised hosts too).
 */
export function headerSafeUrl(url: string): string {
  return UNSAFE_IN_HEADER.test(url) ? url.replace(UNSAFE_IN_HEADER_ALL, percentEncoded) : url;
}
