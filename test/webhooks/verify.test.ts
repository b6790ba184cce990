import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { signatureHeader } from '../../src/modules/webhooks/signature.js';
import {
  computeSignature,
  verifyWebhookSignature,
  WebhookVerificationError,
} from '../../src/modules/webhooks/verify.js';

interface Vector {
  secret: string;
  t: number;
  body: string;
  signedPayload: string;
  v1: string;
  header: string;
}

/** Copy of /work/shared/spec/signature-vectors.json, used when the shared file is not beside the repository. */
const INLINE_VECTORS: Vector[] = [
  {
    secret: 'whsec_test_0123456789abcdef',
    t: 1763719200,
    body: '{"id":"evt_01JD0000000000000000000000","event":"conversion.created","createdAt":"2025-11-21T10:00:00.000Z","brandId":"brd_01JD0000000000000000000000","data":{"conversionId":"conv_01JD0000000000000000000001","partnerId":"prt_01JD0000000000000000000002","offerId":"off_01JD0000000000000000000003","revenueCents":1000,"payoutCents":600,"currency":"USD","status":"pending","sub1":"campaign-42","externalTxnId":"order-1001"}}',
    signedPayload:
      '1763719200.{"id":"evt_01JD0000000000000000000000","event":"conversion.created","createdAt":"2025-11-21T10:00:00.000Z","brandId":"brd_01JD0000000000000000000000","data":{"conversionId":"conv_01JD0000000000000000000001","partnerId":"prt_01JD0000000000000000000002","offerId":"off_01JD0000000000000000000003","revenueCents":1000,"payoutCents":600,"currency":"USD","status":"pending","sub1":"campaign-42","externalTxnId":"order-1001"}}',
    v1: '5c7745a9598b537c3c2eee1a2f51b75054621b540bd146f4885b3bca0a815d14',
    header: 't=1763719200,v1=5c7745a9598b537c3c2eee1a2f51b75054621b540bd146f4885b3bca0a815d14',
  },
  {
    secret: 's3cr3t',
    t: 1700000000,
    body: '{"id":"evt_1","event":"cap.reached","data":{"note":"unicode: café – 日本"}}',
    signedPayload: '1700000000.{"id":"evt_1","event":"cap.reached","data":{"note":"unicode: café – 日本"}}',
    v1: '579e73d47238eb8e6453315ddec7128edf032ba9df348cb73ee710795ec236a4',
    header: 't=1700000000,v1=579e73d47238eb8e6453315ddec7128edf032ba9df348cb73ee710795ec236a4',
  },
  {
    secret: 'a secret with spaces and = signs',
    t: 1,
    body: '',
    signedPayload: '1.',
    v1: '44aa66c810b7a8ab9701b27958a7487f15d9a18ba6c999697b30dd8f80c770ee',
    header: 't=1,v1=44aa66c810b7a8ab9701b27958a7487f15d9a18ba6c999697b30dd8f80c770ee',
  },
];

const VECTORS_FILE = path.resolve('../shared/spec/signature-vectors.json');
const VECTORS: Vector[] = existsSync(VECTORS_FILE)
  ? (JSON.parse(readFileSync(VECTORS_FILE, 'utf8')) as { vectors: Vector[] }).vectors
  : INLINE_VECTORS;

const SECRET = 'whsec_unit_test_secret';
const T = 1_763_719_200;
const BODY = '{"id":"evt_1","event":"partner.approved","data":{}}';
const atSeconds = (seconds: number) => seconds * 1000;
const headerFor = (body: string, t = T, secret = SECRET) => `t=${t},v1=${computeSignature(secret, t, body)}`;

function rejects(run: () => unknown, reason: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError, `expected WebhookVerificationError, got ${String(error)}`);
    assert.match(error.message, reason);
    return true;
  });
}

describe('webhook signature test vectors', () => {
  it('uses the shared vectors file or its inline copy, which agree', () => {
    assert.ok(VECTORS.length >= 3);
    if (existsSync(VECTORS_FILE)) assert.deepEqual(VECTORS, INLINE_VECTORS);
  });

  for (const [index, vector] of VECTORS.entries()) {
    describe(`vector ${index + 1} (t=${vector.t})`, () => {
      it('computes v1 as the lowercase hex HMAC-SHA256 of t + "." + body', () => {
        assert.equal(`${vector.t}.${vector.body}`, vector.signedPayload);
        const independent = createHmac('sha256', vector.secret).update(vector.signedPayload, 'utf8').digest('hex');
        assert.equal(independent, vector.v1);
        assert.equal(computeSignature(vector.secret, vector.t, vector.body), vector.v1);
        assert.equal(computeSignature(vector.secret, vector.t, Buffer.from(vector.body, 'utf8')), vector.v1);
      });

      it('builds the exact header the vector gives', () => {
        assert.equal(signatureHeader(vector.secret, vector.t, vector.body), vector.header);
      });

      it('verifies the header against the raw body as a string, a Buffer and a Uint8Array', () => {
        const now = atSeconds(vector.t);
        const raw = Buffer.from(vector.body, 'utf8');
        for (const rawBody of [vector.body, raw, new Uint8Array(raw)]) {
          assert.equal(verifyWebhookSignature({ secret: vector.secret, header: vector.header, rawBody, now }), true);
        }
      });

      it('rejects the vector with one body byte changed', () => {
        const tampered = `${vector.body} `;
        rejects(
          () =>
            verifyWebhookSignature({
              secret: vector.secret,
              header: vector.header,
              rawBody: tampered,
              now: atSeconds(vector.t),
            }),
          /does not match/,
        );
      });
    });
  }
});

describe('verifyWebhookSignature', () => {
  const verify = (options: { header?: unknown; rawBody?: string; secret?: string; now?: number | Date }) =>
    verifyWebhookSignature({
      secret: options.secret ?? SECRET,
      header: (options.header === undefined ? headerFor(BODY) : options.header) as string,
      rawBody: options.rawBody ?? BODY,
      now: options.now ?? atSeconds(T),
    });

  it('accepts a correctly signed body', () => {
    assert.equal(verify({}), true);
  });

  it('rejects a tampered body', () => {
    rejects(() => verify({ rawBody: BODY.replace('partner.approved', 'partner.banned') }), /does not match/);
  });

  it('rejects a re-serialised body that differs from the raw bytes only in whitespace', () => {
    rejects(() => verify({ rawBody: JSON.stringify(JSON.parse(BODY), null, 2) }), /does not match/);
  });

  it('rejects a signature made with another secret', () => {
    rejects(() => verify({ secret: 'whsec_some_other_secret' }), /does not match/);
  });

  it('rejects a missing or empty header', () => {
    rejects(() => verify({ header: null }), /Missing/);
    rejects(() => verify({ header: '' }), /Missing/);
    rejects(() => verifyWebhookSignature({ secret: SECRET, header: undefined, rawBody: BODY }), /Missing/);
  });

  it('rejects garbled headers without throwing anything but a verification error', () => {
    const v1 = computeSignature(SECRET, T, BODY);
    for (const header of [
      'garbage',
      ',,,',
      '=',
      `v1=${v1}`,
      `t=${T}`,
      `t=abc,v1=${v1}`,
      `t=-5,v1=${v1}`,
      `t=,v1=${v1}`,
    ])
      rejects(() => verify({ header }), /no valid t|no v1 signature/);
    rejects(() => verify({ header: `t=${T},v2=${v1}` }), /no v1/);
  });

  it('rejects a timestamp that was replaced by a later one', () => {
    const v1 = computeSignature(SECRET, T, BODY);
    rejects(() => verify({ header: `t=${T + 1},v1=${v1}`, now: atSeconds(T + 1) }), /does not match/);
  });

  it('accepts a timestamp exactly 300 s old and rejects one 301 s old', () => {
    assert.equal(verify({ now: atSeconds(T + 300) }), true);
    rejects(() => verify({ now: atSeconds(T + 301) }), /too old/);
  });

  it('accepts a timestamp 300 s in the future and rejects one 301 s in the future', () => {
    assert.equal(verify({ now: atSeconds(T - 300) }), true);
    rejects(() => verify({ now: atSeconds(T - 301) }), /future/);
  });

  it('takes the current time as a Date too', () => {
    assert.equal(verify({ now: new Date(atSeconds(T + 10)) }), true);
    rejects(() => verify({ now: new Date(atSeconds(T + 301)) }), /too old/);
  });

  it('honours a custom tolerance', () => {
    const options = { secret: SECRET, header: headerFor(BODY), rawBody: BODY };
    assert.equal(verifyWebhookSignature({ ...options, toleranceSeconds: 10, now: atSeconds(T + 10) }), true);
    rejects(() => verifyWebhookSignature({ ...options, toleranceSeconds: 10, now: atSeconds(T + 11) }), /too old/);
  });

  it('checks the timestamp against the real clock by default', () => {
    const t = Math.floor(Date.now() / 1000);
    const header = headerFor(BODY, t);
    assert.equal(verifyWebhookSignature({ secret: SECRET, header, rawBody: BODY }), true);
    const stale = headerFor(BODY, t - 3600);
    rejects(() => verifyWebhookSignature({ secret: SECRET, header: stale, rawBody: BODY }), /too old/);
  });

  it('accepts a header carrying several v1 values when one of them matches', () => {
    const good = computeSignature(SECRET, T, BODY);
    const bad = computeSignature('rotated-out-secret', T, BODY);
    assert.equal(verify({ header: `t=${T},v1=${bad},v1=${good}` }), true);
    assert.equal(verify({ header: `t=${T},v1=${good},v1=${bad}` }), true);
    assert.equal(verify({ header: `t=${T}, v1=${bad}, v1=${good}` }), true);
    rejects(() => verify({ header: `t=${T},v1=${bad},v1=${bad}` }), /does not match/);
  });

  it('rejects v1 values of the wrong length with a verification error instead of throwing from the comparison', () => {
    const good = computeSignature(SECRET, T, BODY);
    for (const v1 of ['', 'abc', good.slice(0, -1), `${good}0`, `${good}${good}`, 'é'.repeat(64)]) {
      rejects(() => verify({ header: `t=${T},v1=${v1}` }), /does not match|no v1/);
    }
  });

  it('rejects an uppercase hex signature, since v1 is lowercase hex', () => {
    const upper = computeSignature(SECRET, T, BODY).toUpperCase();
    rejects(() => verify({ header: `t=${T},v1=${upper}` }), /does not match/);
  });
});
