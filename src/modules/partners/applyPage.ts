/** Server-rendered pages of the partner application form: plain, accessible HTML. */
import type { ApiError } from '../../http/errors.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
label{display:block;margin-top:1rem;font-weight:600}input{width:100%;padding:.5rem;font:inherit;border:1px solid #555;border-radius:4px;box-sizing:border-box}
input:focus,button:focus{outline:3px solid #1d4ed8;outline-offset:2px}button{margin-top:1.5rem;padding:.6rem 1.2rem;font:inherit;background:#1d4ed8;color:#fff;border:0;border-radius:4px;cursor:pointer}
.error{color:#b91c1c;border:1px solid #b91c1c;padding:.75rem;border-radius:4px}.ok{color:#166534;border:1px solid #166534;padding:.75rem;border-radius:4px}.hint{color:#444;font-size:.9rem}`;

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

export function applicationPage(
  brandName: string,
  slug: string,
  error?: ApiError,
  values: Record<string, string> = {},
): string {
  const value = (name: string) => escapeHtml(values[name] ?? '');
  const problems = error
    ? `<div class="error" role="alert" id="form-error"><p>${escapeHtml(error.message)}</p></div>`
    : '<div role="status" aria-live="polite" id="form-status"></div>';
  return layout(
    `Apply to partner with ${brandName}`,
    `<h1>Become a partner of ${escapeHtml(brandName)}</h1>
<p>Tell us who you are; the team reviews every application.</p>
${problems}
<form method="post" action="/apply/${encodeURIComponent(slug)}" data-slug="${escapeHtml(slug)}" novalidate>
<label for="name">Name or company</label><input id="name" name="name" required maxlength="200" autocomplete="name" value="${value('name')}">
<label for="email">Email</label><input id="email" name="email" type="email" required maxlength="254" autocomplete="email" value="${value('email')}">
<label for="website">Website <span class="hint">(optional)</span></label><input id="website" name="website" type="url" maxlength="2048" placeholder="https://" value="${value('website')}">
<button type="submit">Send application</button>
</form>`,
  );
}

export function confirmationPage(brandName: string): string {
  return layout(
    'Application received',
    `<h1>Thank you</h1><p class="ok" role="status">Your application to ${escapeHtml(brandName)} was received. You will hear from the team once it has been reviewed.</p>`,
  );
}

export function notFoundPage(): string {
  return layout('Not found', '<h1>Not found</h1><p>There is no partner programme at this address.</p>');
}
