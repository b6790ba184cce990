/** The rule every target URL obeys when it is saved (webhook subscriptions, postback templates). */
import type { AppContext } from '../../context.js';
import { InvalidError } from '../../errors.js';
import { httpUrlProblem } from '../urls.js';
import { checkUrlTarget } from './ssrf.js';

/** Refuses URLs that are not absolute http(s) or that point into private networks (422). */
export async function validateTargetUrl(ctx: AppContext, url: string, path = 'url'): Promise<void> {
  const problem = httpUrlProblem(url);
  if (problem) throw InvalidError.at(path, problem);
  const refusal = await checkUrlTarget(url, ctx.config.webhookAllowPrivateNetworks);
  if (refusal) throw InvalidError.at(path, refusal);
}
