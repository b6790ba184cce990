/** URL checks shared by offers, webhooks and postbacks: absolute http(s) URLs only. */
export const MAX_URL_LENGTH = 2048;

export function isHttpUrl(text: string): boolean {
  if (text.length > MAX_URL_LENGTH) return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
