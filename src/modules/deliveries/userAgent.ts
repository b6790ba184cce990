/** The User-Agent of every request the delivery engine sends (webhooks, partner postbacks). */
export const SENDER_USER_AGENT = 'Affitrack-Webhooks/1.0';

/** The product part of SENDER_USER_AGENT: any version of this service's sender. */
const SENDER_PRODUCT = `${SENDER_USER_AGENT.slice(0, SENDER_USER_AGENT.indexOf('/'))}/`;

/** Whether a request came from this service's own sender (a postback pointed back at it). */
export function isOwnSender(userAgent: string | undefined): boolean {
  return userAgent?.startsWith(SENDER_PRODUCT) === true;
}
