/** The User-Agent of every request the delivery engine sends (webhooks, partner postbacks). */
export const SENDER_USER_AGENT = 'Affitrack-Webhooks/1.0';

/** Whether a request came from this service's own sender (a postback pointed back at it). */
export function isOwnSender(userAgent: string | undefined): boolean {
  return userAgent?.startsWith('Affitrack-Webhooks/') === true;
}
