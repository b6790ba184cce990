/**
 * The OpenAPI document against real answers. Every operation of the document is called over
 * real HTTP with real fixtures, on both databases, and every answer is checked against the
 * document: its status must be one the operation documents, its content type one of that
 * response's media types, and a JSON body must validate against that response's schema (Ajv
 * with JSON Schema 2020-12, the dialect of OpenAPI 3.1). Besides its success scenario (the
 * table below), each operation gets the probes its shape calls for: no key (401), an unknown
 * path id (404), a query it refuses (422), and for bodies broken JSON (400), the wrong content
 * type (415) and a body over the limit (413).
 *
 * The operations come from the document itself, so a new route is covered as soon as it is
 * documented — and fails here until it has a success scenario in SCENARIOS.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { default as addFormatsPlugin } from 'ajv-formats';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { createTestEnv, type JsonBody, testedDialects } from '../helpers.js';
import { createHttpEnv, type HttpEnv, type HttpResponse } from '../payouts/http.js';
import { invitedPartner } from '../portal/client.js';
import { Receiver } from '../receiver.js';

interface MediaObject {
  schema?: Record<string, unknown>;
}
interface HeaderObject {
  $ref?: string;
  required?: boolean;
  schema?: { const?: string };
}
interface ResponseObject {
  content?: Record<string, MediaObject>;
  headers?: Record<string, HeaderObject>;
}
interface Operation {
  operationId: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: string; name: string; required?: boolean }>;
  requestBody?: unknown;
  responses: Record<string, ResponseObject>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, unknown>;
}
interface DocumentedOperation {
  method: string;
  path: string;
  operation: Operation;
}

const BODY_LIMIT = 2048;
const ENV = {
  RATE_LIMIT_PER_MINUTE: '100000',
  APPLY_RATE_LIMIT_PER_MINUTE: '100000',
  BODY_LIMIT_BYTES: `${BODY_LIMIT}`,
};

/** The document, read once from an app like the ones under test (it does not depend on the data). */
async function loadDocument(): Promise<OpenApiDocument> {
  const env = await createTestEnv('sqlite');
  try {
    const res = await env.request('GET', '/api/v1/openapi.json', { key: null });
    assert.equal(res.status, 200);
    return res.body as OpenApiDocument;
  } finally {
    await env.close();
  }
}

const documentObject = await loadDocument();
const operations: DocumentedOperation[] = Object.entries(documentObject.paths).flatMap(([path, byMethod]) =>
  Object.entries(byMethod).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
);

/** Checks answers against the document, and remembers which operations answered with a success. */
class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
  private readonly validators = new Map<string, ValidateFunction>();
  readonly succeeded = new Set<string>();

  constructor(private readonly document: OpenApiDocument) {
    addFormatsPlugin.default(this.ajv);
  }

  check(op: DocumentedOperation, res: HttpResponse): void {
    const where = `${op.operation.operationId} (${op.method} ${op.path}) answered ${res.status}`;
    const documented = op.operation.responses[String(res.status)];
    assert.ok(documented, `${where}, a status it does not document: ${res.text.slice(0, 300)}`);
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    if (!documented.content) {
      assert.equal(res.text, '', `${where} with a body it does not document`);
    } else {
      const media = documented.content[mediaType];
      assert.ok(media, `${where} as ${mediaType}, not ${Object.keys(documented.content).join(' or ')}`);
      if (mediaType === 'application/json' && media.schema) {
        const validate = this.validator(op, String(res.status), media.schema);
        assert.ok(validate(res.body), `${where} with a body off its schema: ${JSON.stringify(validate.errors)}`);
      }
    }
    this.checkHeaders(where, documented, res);
    if (res.status < 400) this.succeeded.add(op.operation.operationId);
  }

  /**
   * The headers the response documents: a required one is there (with its value when the
   * document fixes it), and so are RateLimit-* where documented (every call here that is not
   * the 401 probe carries a valid key).
   */
  private checkHeaders(where: string, documented: ResponseObject, res: HttpResponse): void {
    const components = (this.document.components.headers ?? {}) as Record<string, HeaderObject>;
    for (const [name, declared] of Object.entries(documented.headers ?? {})) {
      const header = declared.$ref ? components[declared.$ref.replace('#/components/headers/', '')] : declared;
      assert.ok(header, `${where}: header ${name} resolves`);
      const value = res.headers.get(name);
      if (header.required || name.startsWith('RateLimit-')) assert.notEqual(value, null, `${where} without ${name}`);
      if (value !== null && header.schema?.const !== undefined) assert.equal(value, header.schema.const, name);
    }
  }

  /** The media schema with the document's components beside it, so its `#/components/…` references resolve. */
  private validator(op: DocumentedOperation, status: string, schema: Record<string, unknown>): ValidateFunction {
    const key = `${op.method} ${op.path} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile({ ...schema, components: this.document.components });
      this.validators.set(key, validate);
    }
    return validate;
  }
}

interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  raw?: { body: string; contentType: string };
  key?: string | null;
  headers?: Record<string, string>;
}

function operationById(id: string): DocumentedOperation {
  const found = operations.find((op) => op.operation.operationId === id);
  assert.ok(found, `the document has an operation ${id}`);
  return found;
}

function keyed(op: DocumentedOperation): boolean {
  return (op.operation.security ?? []).length > 0;
}

function requiresBodyFields(op: DocumentedOperation): boolean {
  const body = op.operation.requestBody as { content?: Record<string, MediaObject> } | undefined;
  const required = body?.content?.['application/json']?.schema?.required;
  return Array.isArray(required) && required.length > 0;
}

function pathParams(op: DocumentedOperation): string[] {
  return [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
}

/** The world the scenarios run in: the app on a real port, its fixtures and the checked calls. */
class World {
  offerId = '';
  partnerId = '';
  clickId = '';
  conversionId = '';
  partnerKey = '';
  receiver!: Receiver;
  dispatcher!: Dispatcher;

  constructor(
    readonly env: HttpEnv,
    readonly contract: Contract,
  ) {}

  /** Calls an operation by its operationId (method and path from the document) and checks the answer. */
  async call(id: string, options: CallOptions = {}): Promise<HttpResponse> {
    const op = operationById(id);
    const res = await this.send(op, options);
    this.contract.check(op, res);
    return res;
  }

  async send(op: DocumentedOperation, options: CallOptions): Promise<HttpResponse> {
    const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const value = options.params?.[name];
      assert.ok(value !== undefined, `a value for {${name}} of ${op.operation.operationId}`);
      return encodeURIComponent(value);
    });
    const query = options.query ? `?${new URLSearchParams(options.query)}` : '';
    const key = options.key === undefined ? this.keyFor(op) : options.key;
    const headers: Record<string, string> = { ...options.headers };
    if (key) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (options.raw) {
      body = options.raw.body;
      headers['content-type'] = options.raw.contentType;
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(`${this.env.base}${path}${query}`, {
      method: op.method,
      headers,
      body,
      redirect: 'manual',
    });
    const text = await response.text();
    const json = (response.headers.get('content-type') ?? '').includes('json') && text !== '';
    return { status: response.status, body: json ? JSON.parse(text) : text, text, headers: response.headers };
  }

  keyFor(op: DocumentedOperation): string | null {
    const scheme = Object.keys(op.operation.security?.[0] ?? {})[0];
    if (scheme === 'partnerKey') return this.partnerKey;
    return scheme ? this.env.brand.apiKey : null;
  }

  async newOffer(extra: Record<string, unknown> = {}): Promise<string> {
    const res = await this.call('createOffer', {
      body: { name: 'Contract offer', destinationUrl: 'https://shop.example/landing?c={click_id}', ...extra },
    });
    assert.equal(res.status, 201);
    return res.body.id;
  }

  async newPartner(): Promise<string> {
    const n = Math.random().toString(36).slice(2, 8);
    const res = await this.call('createPartner', { body: { name: `Partner ${n}`, email: `p${n}@example.com` } });
    assert.equal(res.status, 201);
    return res.body.id;
  }

  async newConversion(body: Record<string, unknown> = {}): Promise<JsonBody> {
    const res = await this.call('recordConversion', {
      body: { offerId: this.offerId, partnerId: this.partnerId, ...body },
    });
    assert.equal(res.status, 201);
    return res.body;
  }

  async newClick(offerId = this.offerId, partnerId = this.partnerId): Promise<string> {
    const res = await this.call('followTrackingLink', { params: { offerId, partnerId }, query: { sub1: 'contract' } });
    assert.equal(res.status, 302);
    const clicks = await this.call('listClicks', { query: { offerId, partnerId, limit: '1' } });
    assert.equal(clicks.body.data.length, 1);
    return clicks.body.data[0].id;
  }

  /** A webhook delivery that has run its course (succeeded), through the real delivery engine. */
  async finishedDelivery(): Promise<string> {
    const subscription = await this.call('createWebhookSubscription', {
      body: { url: this.receiver.url, events: ['partner.approved'] },
    });
    assert.equal(subscription.status, 201);
    await this.newPartner();
    // Runs the engine until it has nothing left to send (the manual clock never makes a retry due).
    for (let sent = 1; sent > 0; ) sent = await this.dispatcher.runOnce();
    const deliveries = await this.call('listWebhookSubscriptionDeliveries', {
      params: { id: subscription.body.id },
    });
    assert.equal(deliveries.body.data.length, 1);
    assert.equal(deliveries.body.data[0].status, 'succeeded');
    return deliveries.body.data[0].id;
  }

  /** Approved conversions of a fresh partner, and a payout run over them; returns the payout id. */
  async newPayout(): Promise<{ payoutId: string; partnerId: string }> {
    const partnerId = await this.newPartner();
    const conversion = await this.newConversion({ partnerId, payoutCents: 700 });
    await this.call('approveConversion', { params: { id: conversion.id } });
    this.env.clock.advance(1000);
    const upTo = new Date(this.env.clock.now()).toISOString();
    const run = await this.call('createPayouts', { body: { upTo, partnerId } });
    assert.equal(run.status, 201);
    assert.equal(run.body.data.length, 1);
    return { payoutId: run.body.data[0].id, partnerId };
  }
}

type Scenario = (w: World) => Promise<void>;

const today = '2026-11-21';

/** One success (2xx or 3xx) per operation, by operationId; each makes the fixtures it changes. */
const SCENARIOS: Record<string, Scenario> = {
  getHealth: async (w) => assert.equal((await w.call('getHealth')).status, 200),
  getReadiness: async (w) => assert.equal((await w.call('getReadiness')).status, 200),
  getBrand: async (w) => assert.equal((await w.call('getBrand')).status, 200),
  updateBrand: async (w) => assert.equal((await w.call('updateBrand', { body: { fraudThreshold: 80 } })).status, 200),

  listOffers: async (w) => {
    const res = await w.call('listOffers', { query: { limit: '1' } });
    assert.equal(res.body.data.length, 1);
  },
  createOffer: async (w) => {
    await w.newOffer({ caps: { daily: 5 }, metadata: { team: 'contract' } });
  },
  getOffer: async (w) => assert.equal((await w.call('getOffer', { params: { id: w.offerId } })).status, 200),
  updateOffer: async (w) => {
    const id = await w.newOffer();
    assert.equal((await w.call('updateOffer', { params: { id }, body: { status: 'paused' } })).body.status, 'paused');
  },

  listPartners: async (w) => assert.ok((await w.call('listPartners')).body.data.length > 0),
  createPartner: async (w) => {
    await w.newPartner();
  },
  getPartner: async (w) => assert.equal((await w.call('getPartner', { params: { id: w.partnerId } })).status, 200),
  updatePartner: async (w) => {
    const id = await w.newPartner();
    const res = await w.call('updatePartner', { params: { id }, body: { metadata: { crm: '42' } } });
    assert.equal(res.status, 200);
  },
  applyAsPartner: async (w) => {
    const res = await w.call('applyAsPartner', {
      body: { brandSlug: w.env.brand.slug, name: 'Applicant', email: 'applicant@example.com' },
    });
    assert.equal(res.status, 201);
  },
  approvePartner: async (w) => {
    const applied = await w.call('applyAsPartner', {
      body: { brandSlug: w.env.brand.slug, name: 'To approve', email: 'approve@example.com' },
    });
    const res = await w.call('approvePartner', { params: { id: applied.body.id } });
    assert.equal(res.body.status, 'active');
  },
  banPartner: async (w) => {
    const id = await w.newPartner();
    const res = await w.call('banPartner', { params: { id }, body: { reason: 'Contract test' } });
    assert.equal(res.body.status, 'banned');
  },
  invitePartner: async (w) => {
    const id = await w.newPartner();
    assert.equal((await w.call('invitePartner', { params: { id } })).status, 201);
  },

  followTrackingLink: async (w) => {
    await w.newClick();
  },
  eraseClicks: async (w) => {
    const clickId = await w.newClick();
    assert.deepEqual((await w.call('eraseClicks', { body: { clickId } })).body, { erased: 1 });
  },
  listClicks: async (w) => {
    assert.ok((await w.call('listClicks')).body.data.length > 0);
    const csv = await w.call('listClicks', { query: { format: 'csv' } });
    assert.match(csv.text, /^id,/);
  },

  recordConversion: async (w) => {
    const body = { clickId: w.clickId, externalTxnId: `order-${Math.random()}`, revenueCents: 1000 };
    assert.equal((await w.call('recordConversion', { body })).status, 201);
    assert.equal((await w.call('recordConversion', { body })).status, 200, 'a repeat answers the existing one');
  },
  listConversions: async (w) => {
    assert.ok((await w.call('listConversions', { query: { from: today, to: today } })).body.data.length > 0);
    assert.match((await w.call('listConversions', { query: { format: 'csv' } })).text, /^id,/);
  },
  getConversion: async (w) =>
    assert.equal((await w.call('getConversion', { params: { id: w.conversionId } })).status, 200),
  approveConversion: async (w) => {
    const { id } = await w.newConversion();
    assert.equal((await w.call('approveConversion', { params: { id } })).body.status, 'approved');
  },
  rejectConversion: async (w) => {
    const { id } = await w.newConversion();
    const res = await w.call('rejectConversion', { params: { id }, body: { reason: 'Refunded' } });
    assert.equal(res.body.status, 'rejected');
  },

  getReport: async (w) => {
    const res = await w.call('getReport', { query: { from: today, to: today, groupBy: 'day,offer' } });
    assert.ok(res.body.data.length > 0);
  },

  listBlocklistEntries: async (w) => {
    await w.call('addBlocklistEntry', { body: { type: 'ip', value: '203.0.113.9' } });
    assert.ok((await w.call('listBlocklistEntries')).body.data.length > 0);
  },
  addBlocklistEntry: async (w) => {
    const res = await w.call('addBlocklistEntry', { body: { type: 'cidr', value: '198.51.100.0/24' } });
    assert.equal(res.status, 201);
  },
  deleteBlocklistEntry: async (w) => {
    const entry = await w.call('addBlocklistEntry', { body: { type: 'userAgent', value: 'BadBot/1.0' } });
    assert.equal((await w.call('deleteBlocklistEntry', { params: { id: entry.body.id } })).status, 204);
  },

  listPartnerPostbacks: async (w) => {
    const res = await w.call('listPartnerPostbacks', { params: { id: w.partnerId } });
    assert.equal(res.status, 200);
  },
  createPartnerPostback: async (w) => {
    const res = await w.call('createPartnerPostback', {
      params: { id: w.partnerId },
      body: { url: 'https://partner.example/pb?c={click_id}', events: ['conversion.created'] },
    });
    assert.equal(res.status, 201);
  },
  deletePartnerPostback: async (w) => {
    const made = await w.call('createPartnerPostback', {
      params: { id: w.partnerId },
      body: { url: 'https://partner.example/pb2?c={click_id}', offerId: w.offerId, events: ['conversion.approved'] },
    });
    const res = await w.call('deletePartnerPostback', { params: { id: w.partnerId, postbackId: made.body.id } });
    assert.equal(res.status, 204);
  },

  getPostbackToken: async (w) =>
    assert.equal((await w.call('getPostbackToken', { params: { id: w.offerId } })).status, 200),
  rotatePostbackToken: async (w) => {
    const id = await w.newOffer();
    const before = await w.call('getPostbackToken', { params: { id } });
    const after = await w.call('rotatePostbackToken', { params: { id } });
    assert.notEqual(after.body.token, before.body.token);
  },
  recordPixelPostback: async (w) => {
    const id = await w.newOffer();
    const clickId = await w.newClick(id);
    const { token } = (await w.call('getPostbackToken', { params: { id } })).body;
    const text = await w.call('recordPixelPostback', { query: { token, click_id: clickId, amount: '12.50' } });
    assert.equal(text.text, 'OK');
    const gif = await w.call('recordPixelPostback', {
      query: { token, click_id: clickId, txn_id: 'px-1', pixel: '1' },
    });
    assert.equal(gif.headers.get('content-type'), 'image/gif');
    // A token of no offer: the 401 is checked against the document like every answer (its headers included).
    const refused = await w.call('recordPixelPostback', { query: { token: 'pbt_nope', click_id: clickId } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), null);
  },

  createPayouts: async (w) => {
    await w.newPayout();
  },
  previewPayouts: async (w) => {
    const upTo = new Date(w.env.clock.now()).toISOString();
    assert.equal((await w.call('previewPayouts', { query: { upTo } })).status, 200);
  },
  listPayouts: async (w) => {
    await w.newPayout();
    assert.ok((await w.call('listPayouts')).body.data.length > 0);
  },
  getPayout: async (w) => {
    const { payoutId } = await w.newPayout();
    assert.equal((await w.call('getPayout', { params: { id: payoutId } })).body.conversions.length, 1);
    const csv = await w.call('getPayout', { params: { id: payoutId }, headers: { accept: 'text/csv' } });
    assert.equal(csv.headers.get('content-type')?.split(';')[0], 'text/csv');
  },
  markPayoutPaid: async (w) => {
    const { payoutId } = await w.newPayout();
    const res = await w.call('markPayoutPaid', { params: { id: payoutId }, body: { reference: 'SEPA-1' } });
    assert.equal(res.body.status, 'paid');
  },
  cancelPayout: async (w) => {
    const { payoutId } = await w.newPayout();
    assert.equal((await w.call('cancelPayout', { params: { id: payoutId } })).body.status, 'cancelled');
  },
  getPartnerBalances: async (w) => {
    const { partnerId } = await w.newPayout();
    assert.ok((await w.call('getPartnerBalances', { params: { id: partnerId } })).body.data.length > 0);
  },

  getPartnerReport: async (w) => assert.equal((await w.call('getPartnerReport')).status, 200),
  listPartnerConversions: async (w) => assert.equal((await w.call('listPartnerConversions')).status, 200),
  listPartnerOffers: async (w) => assert.ok((await w.call('listPartnerOffers')).body.data.length > 0),

  listWebhookEvents: async (w) => assert.ok((await w.call('listWebhookEvents', { key: null })).body.data.length > 0),
  createWebhookSubscription: async (w) => {
    const res = await w.call('createWebhookSubscription', {
      body: { url: w.receiver.url, events: ['conversion.created'], secret: 'a secret of the test' },
    });
    assert.equal(res.body.hasSecret, true);
  },
  listWebhookSubscriptions: async (w) => {
    await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    assert.ok((await w.call('listWebhookSubscriptions')).body.data.length > 0);
  },
  getWebhookSubscription: async (w) => {
    const made = await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    assert.equal((await w.call('getWebhookSubscription', { params: { id: made.body.id } })).status, 200);
  },
  updateWebhookSubscription: async (w) => {
    const made = await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    const res = await w.call('updateWebhookSubscription', {
      params: { id: made.body.id },
      body: { status: 'disabled' },
    });
    assert.equal(res.body.status, 'disabled');
  },
  rotateWebhookSecret: async (w) => {
    const made = await w.call('createWebhookSubscription', {
      body: { url: w.receiver.url, events: ['cap.reached'], secret: 'whsec_contract_old_1' },
    });
    const res = await w.call('rotateWebhookSecret', { params: { id: made.body.id }, body: {} });
    assert.match(res.body.secret, /^whsec_/);
    assert.equal(typeof res.body.previousSecretExpiresAt, 'string');
  },
  recoverWebhookDeliveries: async (w) => {
    const made = await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    const res = await w.call('recoverWebhookDeliveries', {
      params: { id: made.body.id },
      body: { since: '2020-01-01T00:00:00.000Z', dryRun: true },
    });
    assert.equal(res.body.deliveries, 0);
  },
  deleteWebhookSubscription: async (w) => {
    const made = await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    assert.equal((await w.call('deleteWebhookSubscription', { params: { id: made.body.id } })).status, 204);
  },
  listWebhookSubscriptionDeliveries: async (w) => {
    await w.finishedDelivery();
  },
  listDeliveries: async (w) => {
    await w.finishedDelivery();
    assert.ok((await w.call('listDeliveries')).body.data.length > 0);
  },
  getDelivery: async (w) => {
    const id = await w.finishedDelivery();
    assert.ok((await w.call('getDelivery', { params: { id } })).body.attempts.length > 0);
  },
  testWebhookSubscription: async (w) => {
    const made = await w.call('createWebhookSubscription', { body: { url: w.receiver.url, events: ['cap.reached'] } });
    const res = await w.call('testWebhookSubscription', {
      params: { id: made.body.id },
      body: { event: 'conversion.created' },
    });
    assert.equal(res.body.test, true);
  },
  listEvents: async (w) => {
    await w.finishedDelivery();
    assert.ok((await w.call('listEvents', { query: { event: 'partner.approved' } })).body.data.length > 0);
  },
  getEvent: async (w) => {
    const id = await w.finishedDelivery();
    const delivery = await w.call('getDelivery', { params: { id } });
    const res = await w.call('getEvent', { params: { id: delivery.body.eventId } });
    assert.ok(res.body.deliveries.length > 0);
  },
  resendEvent: async (w) => {
    const id = await w.finishedDelivery();
    const delivery = await w.call('getDelivery', { params: { id } });
    const res = await w.call('resendEvent', {
      params: { id: delivery.body.eventId },
      body: { subscriptionId: delivery.body.subscriptionId },
    });
    assert.equal(res.status, 201);
  },
  redeliverDelivery: async (w) => {
    const id = await w.finishedDelivery();
    assert.equal((await w.call('redeliverDelivery', { params: { id } })).status, 200);
  },
};

/** The answers an operation's shape calls for, whatever its rules. */
async function probeShape(w: World, op: DocumentedOperation): Promise<void> {
  const statuses = Object.keys(op.operation.responses);
  const unknownIds = Object.fromEntries(pathParams(op).map((name) => [name, 'nope_0000']));
  const check = async (options: CallOptions, expected: number) => {
    const res = await w.send(op, options);
    assert.equal(
      res.status,
      expected,
      `${op.operation.operationId}: ${JSON.stringify(options)} → ${res.text.slice(0, 200)}`,
    );
    w.contract.check(op, res);
  };
  if (keyed(op)) await check({ params: unknownIds, key: null }, 401);
  // An unknown id is 404 once the request is valid: skipped where an empty body is not (its own tests cover it).
  if (pathParams(op).length > 0 && statuses.includes('404') && !requiresBodyFields(op)) {
    // Where the document says the body is optional, none is sent: the route must take that too.
    const body = op.operation.requestBody as { required?: boolean } | undefined;
    await check({ params: unknownIds, ...(body?.required ? { body: {} } : {}) }, 404);
  }
  const queryNames = (op.operation.parameters ?? []).filter((p) => p.in === 'query');
  if (op.method === 'GET' && queryNames.length > 0 && statuses.includes('422')) {
    await check({ params: unknownIds, query: { limit: 'many', token: '', click_id: '' } }, 422);
  }
  if (op.operation.requestBody) {
    await check({ params: unknownIds, raw: { body: '{"name": ', contentType: 'application/json' } }, 400);
    await check({ params: unknownIds, raw: { body: 'name=x', contentType: 'text/plain' } }, 415);
    const big = JSON.stringify({ name: 'x'.repeat(BODY_LIMIT) });
    await check({ params: unknownIds, raw: { body: big, contentType: 'application/json' } }, 413);
  }
}

for (const dialect of testedDialects()) {
  describe(`every documented operation answers as the OpenAPI document says (${dialect})`, () => {
    let w: World;
    before(async () => {
      const env = await createHttpEnv(dialect, { env: ENV });
      w = new World(env, new Contract(documentObject));
      w.receiver = await Receiver.answering(200);
      w.dispatcher = new Dispatcher(env.ctx);
      w.offerId = await w.newOffer();
      const partner = await invitedPartner(env, 'Contract Partner');
      w.partnerId = partner.partnerId;
      w.partnerKey = await partnerKey(partner.client);
      w.clickId = await w.newClick();
      w.conversionId = (await w.newConversion({ clickId: w.clickId, offerId: undefined, partnerId: undefined })).id;
    });
    after(async () => {
      await w.dispatcher.close();
      await w.receiver.close();
      await w.env.close();
    });

    for (const op of operations) {
      it(`${op.operation.operationId}: ${op.method} ${op.path}`, async () => {
        const scenario = SCENARIOS[op.operation.operationId];
        assert.ok(scenario, `add a success scenario for ${op.operation.operationId} to SCENARIOS`);
        await scenario(w);
        assert.ok(w.contract.succeeded.has(op.operation.operationId), 'the scenario got a documented success');
        await probeShape(w, op);
      });
    }
  });
}

/** A partner API key, created by the partner in the portal as a partner would. */
async function partnerKey(client: Awaited<ReturnType<typeof invitedPartner>>['client']): Promise<string> {
  await client.get('/portal/api-keys');
  const page = await client.post('/portal/api-keys', { name: 'Contract' });
  const secret = /value="(afp_[A-Za-z0-9_-]+)"/.exec(page.body)?.[1];
  assert.ok(secret, 'the portal shows the new key');
  return secret;
}
