import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
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

/**
 * The spec's signature vectors (section 5), kept in the repository byte for byte as the spec
 * ships them, so the test reads nothing outside the checkout.
 */
const VECTORS_FILE = fileURLToPath(new URL('./signature-vectors.json', import.meta.url));
const VECTORS = (JSON.parse(readFileSync(VECTORS_FILE, 'utf8')) as { vectors: Vector[] }).vectors;

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
  it("reads the spec's vectors from the repository", () => {
    assert.ok(VECTORS.length >= 3);
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

  it('refuses an empty or missing secret with a verification error, even for a signature made with ""', () => {
    const now = atSeconds(T);
    const signedWithEmpty = headerFor(BODY, T, '');
    for (const secret of ['', undefined, null]) {
      rejects(
        () => verifyWebhookSignature({ secret: secret as string, header: signedWithEmpty, rawBody: BODY, now }),
        /No webhook secret/,
      );
    }
    // The same check comes before the header's: a misconfigured receiver learns why at once.
    rejects(() => verifyWebhookSignature({ secret: '', header: null, rawBody: BODY, now }), /No webhook secret/);
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
