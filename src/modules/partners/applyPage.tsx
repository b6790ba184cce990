/** The partner application form's pages: plain, accessible HTML that needs no JavaScript. */
import { escapeHtml } from '@kitajs/html';
import type { ApiError } from '../../http/errors.js';
import { PublicPage } from '../../web/views/PublicPage.js';

export interface ApplicationValues {
  name?: string;
  email?: string;
  website?: string;
}

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
  return (
    <PublicPage title={`Apply to partner with ${brandName}`}>
      <h1 safe>Become a partner of {brandName}</h1>
      <p>Tell us who you are; the team reviews every application.</p>
      {error ? (
        <div class="error" role="alert" id="form-error">
          <p safe>{error.message}</p>
        </div>
      ) : (
        <div role="status" aria-live="polite" id="form-status"></div>
      )}
      <form method="post" action={`/apply/${encodeURIComponent(slug)}`} novalidate>
        <label for="name">Name or company</label>
        <input
          id="name"
          name="name"
          required
          maxlength="200"
          autocomplete="name"
          value={escapeHtml(values.name ?? '')}
        />
        <label for="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          required
          maxlength="254"
          autocomplete="email"
          value={escapeHtml(values.email ?? '')}
        />
        <label for="website">
          Website <span class="hint">(optional)</span>
        </label>
        <input
          id="website"
          name="website"
          type="url"
          maxlength="2048"
          placeholder="https://"
          value={escapeHtml(values.website ?? '')}
        />
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

/** An address of the form's the router refused before routing (web/routerRefusal.ts). */
export function RefusedAddressPage({ status, message }: { status: number; message: string }) {
  const title = status === 404 ? 'Not found' : 'Bad request';
  return (
    <PublicPage title={title}>
      <h1>{title}</h1>
      <p safe>{message}</p>
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
