/**
 * A browser-like client of the partner portal over real HTTP: keeps the cookies it is given
 * (one area's, as a browser would send them to /portal), reads the CSRF token of each page,
 * and posts forms. Also: inviting a partner through the API and accepting the invite.
 */
import assert from 'node:assert/strict';
import type { HttpEnv } from '../payouts/http.js';

export const PARTNER_PASSWORD = 'partner password 1';

export interface Page {
  status: number;
  body: string;
  location: string | null;
  headers: Headers;
}

export class PortalClient {
  readonly cookies = new Map<string, string>();
  csrf = '';

  constructor(private readonly base: string) {}

  private async send(method: 'GET' | 'POST', path: string, form?: URLSearchParams): Promise<Page> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers,
      body: form?.toString(),
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = cookie.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /expires=Thu, 01 Jan 1970/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(eq + 1).trim());
    }
    const body = await response.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(body);
    if (token?.[1]) this.csrf = token[1];
    return { status: response.status, body, location: response.headers.get('location'), headers: response.headers };
  }

  get(path: string): Promise<Page> {
    return this.send('GET', path);
  }

  post(path: string, fields: Record<string, string | string[]> = {}): Promise<Page> {
    const form = new URLSearchParams({ _csrf: this.csrf });
    for (const [key, value] of Object.entries(fields)) for (const v of [value].flat()) form.append(key, v);
    return this.send('POST', path, form);
  }

  async signIn(email: string, password = PARTNER_PASSWORD): Promise<Page> {
    await this.get('/portal/login');
    return this.post('/portal/login', { email, password });
  }
}

/** `POST /api/v1/partners/:id/invite` with the brand's key; returns the link's path and query. */
export async function invite(env: HttpEnv, partnerId: string, key = env.brand.apiKey): Promise<string> {
  const res = await env.http('POST', `/api/v1/partners/${partnerId}/invite`, { key });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const url = new URL(res.body.url);
  return `${url.pathname}${url.search}`;
}

/** A client signed in as a new partner of the brand of `key`, through an invite. */
export async function invitedPartner(
  env: HttpEnv,
  name: string,
  key = env.brand.apiKey,
): Promise<{ client: PortalClient; partnerId: string; email: string }> {
  const email = `${name.toLowerCase().replace(/[^a-z0-9]/g, '')}@partners.example`;
  const created = await env.http('POST', '/api/v1/partners', { key, body: { name, email } });
  assert.equal(created.status, 201);
  const client = new PortalClient(env.base);
  const link = await invite(env, created.body.id, key);
  assert.equal((await client.get(link)).status, 200);
  const token = new URLSearchParams(link.split('?')[1]).get('token') ?? '';
  const accepted = await client.post('/portal/invite', {
    token,
    password: PARTNER_PASSWORD,
    confirm: PARTNER_PASSWORD,
  });
  assert.equal(accepted.status, 303, accepted.body.slice(0, 500));
  return { client, partnerId: created.body.id, email };
}
