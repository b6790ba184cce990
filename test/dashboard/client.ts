/**
 * A cookie-keeping client for the dashboard over `app.inject`: it signs in through the real
 * form, remembers cookies like a browser (path /dashboard), and reads the CSRF token from
 * the pages it gets.
 */

import { createUser } from '../../src/modules/users/service.js';
import type { TestEnv } from '../helpers.js';

export const PASSWORD = 'correct horse battery';

export interface PageResponse {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  location: string | undefined;
  setCookies: string[];
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();
  csrf = '';
  /** Where the next requests come from: the socket's peer and any proxy headers it adds. */
  from: { remoteAddress?: string; headers?: Record<string, string> } = {};

  constructor(private readonly env: TestEnv) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private async send(method: 'GET' | 'POST', url: string, payload?: string, headers: Record<string, string> = {}) {
    const response = await this.env.app.inject({
      method,
      url,
      payload,
      ...(this.from.remoteAddress ? { remoteAddress: this.from.remoteAddress } : {}),
      headers: {
        ...(this.cookies.size > 0 ? { cookie: this.cookieHeader() } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...this.from.headers,
        ...headers,
      },
    });
    const raw = response.headers['set-cookie'];
    const setCookies = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    for (const cookie of setCookies) {
      const [pair = '', ...attributes] = cookie.split(';');
      const [name = '', value = ''] = pair.split('=');
      const maxAge = attributes.find((a) => a.trim().toLowerCase().startsWith('max-age='));
      if (maxAge && Number(maxAge.split('=')[1]) <= 0) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value.trim());
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(response.body);
    if (token?.[1]) this.csrf = token[1];
    return {
      status: response.statusCode,
      body: response.body,
      headers: response.headers as PageResponse['headers'],
      location: response.headers.location as string | undefined,
      setCookies,
    };
  }

  get(url: string): Promise<PageResponse> {
    return this.send('GET', url);
  }

  /** Posts a form; `_csrf` is the last token seen unless the fields give their own. */
  post(url: string, fields: Record<string, string | string[]> = {}, options: { csrf?: string | null } = {}) {
    const form = new URLSearchParams();
    const token = options.csrf === undefined ? this.csrf : options.csrf;
    if (token !== null) form.set('_csrf', token);
    for (const [key, value] of Object.entries(fields)) {
      for (const v of Array.isArray(value) ? value : [value]) form.append(key, v);
    }
    return this.send('POST', url, form.toString());
  }

  /** Signs in through the form; returns the POST's response. */
  async signIn(email: string, password = PASSWORD): Promise<PageResponse> {
    await this.get('/dashboard/login');
    const response = await this.post('/dashboard/login', { email, password });
    if (response.status === 303) await this.get('/dashboard');
    return response;
  }
}

/** A Set-Cookie header as name, value and attributes (names as sent, flags as `true`). */
export function parseSetCookie(header: string) {
  const [pair = '', ...parts] = header.split(';').map((p) => p.trim());
  const index = pair.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq === -1) attributes[part] = true;
    else attributes[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return { name: pair.slice(0, index), value: pair.slice(index + 1), attributes };
}

let userCounter = 0;

/** A dashboard user of `brandId` (a fresh email each call). */
export async function createDashboardUser(env: TestEnv, brandId = env.brand.id): Promise<string> {
  userCounter += 1;
  const email = `user${userCounter}-${brandId.slice(-6).toLowerCase()}@example.com`;
  await createUser(env.ctx, { brandId, email, password: PASSWORD });
  return email;
}

/** A client already signed in as a new user of `brandId`. */
export async function signedInClient(env: TestEnv, brandId = env.brand.id): Promise<DashboardClient> {
  const client = new DashboardClient(env);
  const response = await client.signIn(await createDashboardUser(env, brandId));
  if (response.status !== 303) throw new Error(`sign-in failed: ${response.status} ${response.body.slice(0, 300)}`);
  return client;
}
