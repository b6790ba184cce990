/** Rounded rates (EPC, success rates) from the exact quotient of their counts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { roundedRatio } from '../../src/ratio.js';

/** The reference: half up in integers, `floor((2·n·10^d + m) / 2m) / 10^d`, with BigInt. */
function exactHalfUp(numerator: number, denominator: number, decimals: number): number {
  const scaled = BigInt(numerator) * 10n ** BigInt(decimals);
  const d = BigInt(denominator);
  return Number((2n * scaled + d) / (2n * d)) / 10 ** decimals;
}

describe('roundedRatio', () => {
  it('rounds exact halves up, where rounding (a / b) * 100 rounded some down', () => {
    assert.equal(roundedRatio(41, 40, 2), 1.03);
    assert.equal(roundedRatio(67, 40, 2), 1.68);
    assert.equal(roundedRatio(57, 800, 4), 0.0713);
    assert.equal(roundedRatio(88_560_000, 86_400_000, 2), 1.03);
    assert.equal(roundedRatio(50, 101, 0), 0);
    assert.equal(roundedRatio(1, 2, 0), 1);
  });

  it('agrees with integer half-up rounding for every ratio of counts up to 500', () => {
    let compared = 0;
    for (let denominator = 1; denominator <= 500; denominator++) {
      for (let numerator = 0; numerator <= 2 * denominator; numerator++) {
        for (const decimals of [0, 2, 4]) {
          const expected = exactHalfUp(numerator, denominator, decimals);
          if (roundedRatio(numerator, denominator, decimals) !== expected) {
            assert.fail(`${numerator} / ${denominator} to ${decimals} decimals: expected ${expected}`);
          }
          compared++;
        }
      }
    }
    assert.equal(compared, 3 * (500 * 501 + 500));
  });
});
