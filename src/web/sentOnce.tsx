/**
 * Forms whose answer shows a new secret once (an API key, a webhook signing secret, a portal
 * invite link) are
 * answered directly — a secret never travels in a URL or a cookie — so reloading that answer,
 * or going Back and Forward, posts the form again. Each such form carries a one-time id; the
 * first post claims it (a row of idempotency_keys, cleared with them after 24 hours) and a
 * repeat creates nothing.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.js';

export const FORM_ID_FIELD = 'formId';

/** A fresh one-time id, for a form built by a component of its own (a one-button form). */
export function newFormId(): string {
  return randomBytes(16).toString('base64url');
}

/** The hidden one-time id of a form that creates something with a secret. */
export function FormIdField() {
  return <input type="hidden" name={FORM_ID_FIELD} value={newFormId()} />;
}

/**
 * Claims `formId` for `scope` (who posts: a dashboard user, a portal partner). False when it
 * was claimed before: the form was sent already. A post without an id is let through.
 */
export async function claimForm(ctx: AppContext, scope: string, formId: string | undefined): Promise<boolean> {
  if (!formId) return true;
  const claimed = await ctx.db.transact((trx) =>
    trx
      .insertInto('idempotency_keys')
      .values({
        scope: `form:${scope}`,
        key: formId,
        fingerprint: 'form',
        status_code: null,
        response_body: null,
        work_committed: 1,
        locked_until: 0,
        created_at: ctx.clock.now(),
      })
      .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst(),
  );
  return claimed !== undefined;
}

const FIRST_ANSWER = {
  key: 'the key was created then and its secret shown once',
  subscription: 'the subscription was created then and its signing secret shown once',
  secret: 'the signing secret was rotated then and the new one shown once',
  invite: 'the invite was created then and its link shown once',
};

/** What a repeated post is told (the secret was shown once, with the first answer). */
export function ALREADY_CREATED(what: keyof typeof FIRST_ANSWER): string {
  return `This form was sent already: ${FIRST_ANSWER[what]}. Nothing new was created.`;
}
