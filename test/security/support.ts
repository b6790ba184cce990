/**
 * Shared pieces of the security tests: the operations of the served OpenAPI document, one
 * real resource of every kind in a brand (for filling `{id}` path params), the error-shape
 * check and a snapshot of every row a brand owns (to prove another brand changed nothing).
 */
import assert from 'node:assert/strict';
import type { TestEnv } from '../helpers.js';

/** Rate limits high enough that hundreds of requests in one (frozen) minute pass. */
export const UNLIMITED = {
  RATE_LIMIT_PER_MINUTE: '100000000',
  APPLY_RATE_LIMIT_PER_MINUTE: '100000000',
  POSTBACK_RATE_LIMIT_PER_MINUTE: '100000000',
};

export interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  enum?: unknown[];
  [key: string]: unknown;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: JsonSchema;
}

export interface Operation {
  method: string;
  /** OpenAPI path with `{param}` placeholders. */
  path: string;
  /** The operation declares bearerAuth in the document. */
  documentedKeyed: boolean;
  pathParams: string[];
  query: Parameter[];
  bodySchema: JsonSchema | null;
}

/** The partner API: keyed by partner keys (afp_…), whose isolation test/partnerApi covers. */
export const isPartnerApi = (path: string) => path.startsWith('/api/v1/partner/');

/** DESIGN §2a: the routes that take an API key. */
export function takesKey(path: string): boolean {
  if (path === '/api/v1/openapi.json') return false;
  return (
    path.startsWith('/api/v1/') ||
    path.startsWith('/api/public/webhooks') ||
    path.startsWith('/api/public/webhook-deliveries') ||
    path.startsWith('/api/public/events')
  );
}

interface OpenApiOperation {
  parameters?: Parameter[];
  security?: Array<Record<string, unknown>>;
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

export const label = (op: Pick<Operation, 'method' | 'path'>) => `${op.method} ${op.path}`;

/** Every operation of the OpenAPI document the app serves. */
export async function loadOperations(env: TestEnv): Promise<Operation[]> {
  const res = await env.request('GET', '/api/v1/openapi.json', { key: null });
  assert.equal(res.status, 200);
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, OpenApiOperation>>(res.body.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const parameters: Parameter[] = op.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        path,
        // A brand key (bearerAuth) or, on /api/v1/partner/*, a partner key (partnerKey).
        documentedKeyed: (op.security ?? []).some(
          (s: Record<string, unknown>) => 'bearerAuth' in s || 'partnerKey' in s,
        ),
        pathParams: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string),
        query: parameters.filter((p) => p.in === 'query'),
        bodySchema: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return operations;
}

/**
 * Every route the app really serves (from the router, so routes hidden from the document
 * are included), as OpenAPI-style paths; HEAD and the docs' static wildcard are left out.
 */
export function servedRoutes(env: TestEnv): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  const stack: string[] = [];
  for (const line of env.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│├└─ ]*)(\S.*?) \(([A-Z, ]+)\)$/.exec(line);
    if (!match) continue;
    const depth = Math.floor((match[1] as string).length / 4);
    stack.length = depth;
    stack[depth] = match[2] as string;
    const path = stack.join('').replace(/:(\w+)/g, '{$1}');
    if (path.includes('*')) continue;
    for (const method of (match[3] as string).split(', ')) if (method !== 'HEAD') routes.push({ method, path });
  }
  return routes;
}

/** Served routes with what the document says about them; undocumented ones have no schemas. */
export async function loadAllRoutes(env: TestEnv): Promise<Operation[]> {
  const documented = await loadOperations(env);
  return servedRoutes(env).map(
    (route) =>
      documented.find((op) => op.method === route.method && op.path === route.path) ?? {
        ...route,
        documentedKeyed: false,
        pathParams: [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string),
        query: [],
        bodySchema: null,
      },
  );
}

export function fillPath(path: string, value: (param: string) => string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => value(name));
}

/** One real resource of each kind, created through the API in one brand. */
export interface Resources {
  offer: string;
  partner: string;
  applicant: string;
  click: string;
  conversion: string;
  subscription: string;
  delivery: string;
  event: string;
  blocklist: string;
  postback: string;
  payout: string;
  postbackToken: string;
  webhookSecret: string;
}

/**
 * Which resource fills a path param. A keyed route with an id param that this table does
 * not know makes the isolation test fail, so new routes cannot slip past it.
 */
const PARAM_RESOURCES: Array<[RegExp, string, keyof Resources]> = [
  [/^\/api\/v1\/offers\/\{id\}/, 'id', 'offer'],
  [/^\/api\/v1\/partners\/\{id\}/, 'id', 'partner'],
  [/^\/api\/v1\/partners\/\{id\}\/postbacks\/\{postbackId\}$/, 'postbackId', 'postback'],
  [/^\/api\/v1\/conversions\/\{id\}/, 'id', 'conversion'],
  [/^\/api\/v1\/fraud\/blocklist\/\{id\}$/, 'id', 'blocklist'],
  [/^\/api\/public\/webhooks\/\{id\}/, 'id', 'subscription'],
  [/^\/api\/public\/webhook-deliveries\/\{id\}/, 'id', 'delivery'],
  [/^\/api\/public\/events\/\{id\}/, 'id', 'event'],
  [/^\/api\/v1\/payouts\/\{id\}/, 'id', 'payout'],
];

export function resourceFor(path: string, param: string): keyof Resources | null {
  const found = PARAM_RESOURCES.find(([pattern, name]) => name === param && pattern.test(path));
  return found ? found[2] : null;
}

async function created<T = { id: string }>(
  env: TestEnv,
  key: string | null,
  method: string,
  url: string,
  body?: unknown,
): Promise<T> {
  const res = await env.request(method, url, { key, body });
  assert.ok(res.status === 200 || res.status === 201, `${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Creates one resource of every kind in the brand of `key` (private webhook targets must be allowed). */
export async function createResources(env: TestEnv, key: string, brandSlug: string): Promise<Resources> {
  const webhookSecret = `whsec_${Math.random().toString(36).slice(2)}_s3cret`;
  // The subscription comes first, so the events below leave a delivery row behind.
  const subscription = await created(env, key, 'POST', '/api/public/webhooks', {
    url: 'http://127.0.0.1:9/hook',
    events: ['partner.approved', 'partner.applied', 'conversion.created'],
    secret: webhookSecret,
  });
  const offer = await created(env, key, 'POST', '/api/v1/offers', {
    name: 'Offer',
    destinationUrl: 'https://shop.example/land?c={click_id}',
    conversionStatus: 'pending',
  });
  const partner = await created(env, key, 'POST', '/api/v1/partners', { name: 'Partner', email: 'p@example.com' });
  const applicant = await created(env, null, 'POST', '/api/public/partners/apply', {
    brandSlug,
    name: 'Applicant',
    email: 'a@example.com',
  });
  const redirect = await env.request('GET', `/t/${offer.id}/${partner.id}`, { key: null });
  assert.equal(redirect.status, 302);
  const click = new URL(String(redirect.headers.location)).searchParams.get('c') ?? '';
  assert.match(click, /^clk_/);
  const conversion = await created(env, key, 'POST', '/api/v1/conversions', { clickId: click });
  const blocklist = await created(env, key, 'POST', '/api/v1/fraud/blocklist', { type: 'ip', value: '203.0.113.9' });
  const postback = await created(env, key, 'POST', `/api/v1/partners/${partner.id}/postbacks`, {
    url: 'https://pb.example/p?c={click_id}',
    events: ['conversion.created'],
  });
  const token = await created<{ token: string }>(env, key, 'GET', `/api/v1/offers/${offer.id}/postback-token`);
  // An approved conversion in a payout (created, so mark-paid and cancel have something to act on).
  const paid = await created(env, key, 'POST', '/api/v1/conversions', {
    offerId: offer.id,
    partnerId: partner.id,
    payoutCents: 500,
  });
  await created(env, key, 'POST', `/api/v1/conversions/${paid.id}/approve`);
  const run = await created<{ data: Array<{ id: string }> }>(env, key, 'POST', '/api/v1/payouts', {
    upTo: new Date(env.clock.now()).toISOString(),
  });
  const payout = run.data[0];
  assert.ok(payout, 'the run created a payout');
  const deliveries = await created<{ data: Array<{ id: string; eventId: string }> }>(
    env,
    key,
    'GET',
    '/api/public/webhook-deliveries',
  );
  const delivery = deliveries.data[0];
  assert.ok(delivery, 'the events left a delivery');
  return {
    offer: offer.id,
    partner: partner.id,
    applicant: applicant.id,
    click,
    conversion: conversion.id,
    subscription: subscription.id,
    delivery: delivery.id,
    event: delivery.eventId,
    blocklist: blocklist.id,
    postback: postback.id,
    payout: payout.id,
    postbackToken: token.token,
    webhookSecret,
  };
}

/** Tables holding a brand's data, each with a `brand_id` column. */
const BRAND_TABLES = [
  'offers',
  'partners',
  'conversions',
  'clicks',
  'events',
  'analytics_facts',
  'webhook_subscriptions',
  'webhook_deliveries',
  'partner_postbacks',
  'fraud_blocklist',
  'payouts',
  'payout_runs',
  'partner_invites',
] as const;

/** Every row the brand owns, in a stable order, for before/after comparison. */
export async function snapshotBrand(env: TestEnv, brandId: string): Promise<Record<string, unknown[]>> {
  const db = env.ctx.db.read;
  const snapshot: Record<string, unknown[]> = {};
  snapshot.brands = await db.selectFrom('brands').selectAll().where('id', '=', brandId).execute();
  for (const table of BRAND_TABLES) {
    // Every table here has brand_id; one member of the union stands for all in the types.
    const rows = await db
      .selectFrom(table as 'offers')
      .selectAll()
      .where('brand_id', '=', brandId)
      .execute();
    snapshot[table] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return snapshot;
}

/** Asserts `{ error: { code, message, details?, requestId } }` and nothing else. */
export function assertErrorShape(res: { status: number; body: unknown }, context: string): void {
  const body = res.body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null;
  const where = `${context} → ${res.status} ${String(JSON.stringify(body)).slice(0, 300)}`;
  assert.ok(body && typeof body === 'object' && !Array.isArray(body), `error body is not a JSON object: ${where}`);
  assert.deepEqual(Object.keys(body), ['error'], where);
  const error = body?.error;
  assert.ok(error && typeof error === 'object', where);
  assert.equal(typeof error.code, 'string', where);
  assert.ok(typeof error.message === 'string' && error.message.length > 0, where);
  const extra = Object.keys(error).filter((k) => !['code', 'message', 'details', 'requestId'].includes(k));
  assert.deepEqual(extra, [], where);
  assert.ok(typeof (error as { requestId?: unknown }).requestId === 'string', `error.requestId missing: ${where}`);
  if (error.details !== undefined) {
    assert.ok(Array.isArray(error.details), where);
    for (const d of error.details as Array<{ path?: unknown; message?: unknown }>) {
      assert.ok(typeof d.path === 'string' && typeof d.message === 'string', where);
    }
  }
}
