/** The one conversion between minor units (stored) and major units (written by people). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { currencyDecimals, formatMajorUnits, parseMajorUnits } from '../../src/money.js';

describe('money in major and minor units', () => {
  it("knows each currency's decimals, and assumes 2 for a code Intl does not know", () => {
    assert.deepEqual(
      ['USD', 'EUR', 'JPY', 'KWD', 'QQQ'].map((c) => currencyDecimals(c)),
      [2, 2, 0, 3, 2],
    );
  });

  it("formats minor units as a plain decimal with the currency's decimals", () => {
    assert.equal(formatMajorUnits(1250, 'USD'), '12.50');
    assert.equal(formatMajorUnits(5, 'USD'), '0.05');
    assert.equal(formatMajorUnits(600, 'JPY'), '600');
    assert.equal(formatMajorUnits(1234, 'KWD'), '1.234');
  });

  it('parses major units into minor units', () => {
    assert.equal(parseMajorUnits('12.5', 'USD'), 1250);
    assert.equal(parseMajorUnits('12.50', 'USD'), 1250);
    assert.equal(parseMajorUnits(' 12 ', 'USD'), 1200);
    assert.equal(parseMajorUnits('0.05', 'USD'), 5);
    assert.equal(parseMajorUnits('600', 'JPY'), 600);
    assert.equal(parseMajorUnits('1.234', 'KWD'), 1234);
  });

  it('refuses what is not an amount in the currency', () => {
    for (const [text, currency] of [
      ['12.345', 'USD'],
      ['12.5', 'JPY'],
      ['-1', 'USD'],
      ['+1', 'USD'],
      ['1e3', 'USD'],
      ['12.', 'USD'],
      ['.5', 'USD'],
      ['1,50', 'EUR'],
      ['', 'USD'],
      ['abc', 'USD'],
    ]) {
      assert.equal(parseMajorUnits(text as string, currency as string), null, `${text} ${currency}`);
    }
  });

  it('bounds the digits before the point (12 unless told otherwise)', () => {
    assert.equal(parseMajorUnits('9'.repeat(12), 'USD'), 999_999_999_999 * 100);
    assert.equal(parseMajorUnits('9'.repeat(13), 'USD'), null);
    assert.equal(parseMajorUnits('9'.repeat(13), 'USD', 13), 9_999_999_999_999 * 100);
  });
});
