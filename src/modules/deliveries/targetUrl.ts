/** The rule every target URL obeys when it is saved (webhook subscriptions, postback templates). */
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { isHttpUrl } from '../urls.js';
import { checkUrlTarget } from './ssrf.js';

/** Refuses URLs that are not absolute http(s) or that point into private networks (422). */
export async function validateTargetUrl(ctx: AppContext, url: string, path = 'url'): Promise<void> {
  if (!isHttpUrl(url)) throw new InvalidError([{ path, message: 'must be an absolute http(s) URL' }]);
  const refusal = await checkUrlTarget(url, ctx.config.webhookAllowPrivateNetworks);
  if (refusal) throw new InvalidError([{ path, message: refusal }]);
}
