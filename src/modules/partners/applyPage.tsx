/** The partner application form's pages: plain, accessible HTML that needs no JavaScript. */
import type { ApiError } from '../../http/errors.js';
import { FormView } from '../../web/views/form.js';
import { PublicPage } from '../../web/views/PublicPage.js';

export interface ApplicationValues {
  name?: string;
  email?: string;
  website?: string;
}

const LABELS = { name: 'Name or company', email: 'Email', website: 'Website (optional)' };

/** The form; a refused one comes back with every problem beside its field and the focus on the summary. */
export function ApplicationPage({
  brandName,
  slug,
  error,
  values = {},
}: {
  brandName: string;
  slug: string;
  error?: ApiError;
  values?: ApplicationValues;
}) {
  const f = new FormView({ ...values }, LABELS, error);
  return (
    <PublicPage title={`Apply to partner with ${brandName}`}>
      <h1 safe>Become a partner of {brandName}</h1>
      <p>Tell us who you are; the team reviews every application.</p>
      {error ? f.summary() : <div role="status" aria-live="polite" id="form-status"></div>}
      <form method="post" action={`/apply/${encodeURIComponent(slug)}`} novalidate>
        {f.input('name', { required: true, attrs: { maxlength: '200', autocomplete: 'name' } })}
        {f.input('email', { type: 'email', required: true, attrs: { maxlength: '254', autocomplete: 'email' } })}
        {f.input('website', { type: 'url', attrs: { maxlength: '2048', placeholder: 'https://' } })}
        <button type="submit">Send application</button>
      </form>
    </PublicPage>
  );
}

export function ConfirmationPage({ brandName }: { brandName: string }) {
  return (
    <PublicPage title="Application received">
      <h1>Thank you</h1>
      <p class="ok" role="status" safe>
        Your application to {brandName} was received. You will hear from the team once it has been reviewed.
      </p>
    </PublicPage>
  );
}

const ERROR_TITLES: Record<number, string> = {
  400: 'Bad request',
  404: 'Not found',
  413: 'Too much to send',
  415: 'Not sent from the form',
  422: 'Not accepted',
  429: 'Too many applications',
  503: 'Temporarily unavailable',
};

/**
 * The form's answer when a post or an address cannot be used: the router's refusals
 * (web/routerRefusal.ts) and the refusals before the form is read (rate limit, body size and
 * type), with a way back to the form when there is one.
 */
export function ApplicationErrorPage({
  status,
  message,
  formPath,
}: {
  status: number;
  message: string;
  formPath?: string;
}) {
  const title = ERROR_TITLES[status] ?? 'Something went wrong';
  return (
    <PublicPage title={title}>
      <h1 safe>{title}</h1>
      <p safe>{message}</p>
      {formPath ? (
        <p>
          <a href={formPath}>Back to the form</a>
        </p>
      ) : (
        ''
      )}
    </PublicPage>
  );
}

export function NoProgrammePage() {
  return (
    <PublicPage title="Not found">
      <h1>Not found</h1>
      <p>There is no partner programme at this address.</p>
    </PublicPage>
  );
}
