/** The rule every target URL obeys when it is saved (webhook subscriptions, postback templates). */
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { httpUrlProblem } from '../urls.js';
import { checkUrlTarget } from './ssrf.js';

const CREDENTIALS_PROBLEM =
  'must not contain a user name or password: authenticate deliveries with a signing secret, or a token in the path or query';

const OWN_URL_PROBLEM =
  'must not point at this service itself (PUBLIC_URL): a postback to its own tracking links or pixel would record clicks or conversions, and could feed on itself';

/** Of a URL httpUrlProblem passed (so it parses). */
function hasCredentials(url: string): boolean {
  const parsed = new URL(url);
  return parsed.username !== '' || parsed.password !== '';
}

/** Of a URL httpUrlProblem passed: whether it is on this service's own host (any scheme). */
function isOwnHost(ctx: AppContext, url: string): boolean {
  return new URL(url).host === new URL(ctx.config.publicUrl).host;
}

/**
 * Refuses URLs that are not absolute http(s), that carry a user name or password (they would
 * be shown back in every answer and log, and are not sent: sign deliveries with a secret
 * instead), that point at this service itself, or that point into private networks (422).
 */
export async function validateTargetUrl(ctx: AppContext, url: string, path = 'url'): Promise<void> {
  const problem =
    httpUrlProblem(url) ??
    (hasCredentials(url) ? CREDENTIALS_PROBLEM : null) ??
    (isOwnHost(ctx, url) ? OWN_URL_PROBLEM : null);
  if (problem) throw InvalidError.at(path, problem);
  const refusal = await checkUrlTarget(url, ctx.config.webhookAllowPrivateNetworks);
  if (refusal) throw InvalidError.at(path, refusal);
}
