/** The one conversion between minor units (stored) and major units (written by people). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { money } from '../../src/modules/dashboard/format.js';
import { currencyDecimals, formatMajorUnits, parseMajorUnits } from '../../src/money.js';

describe('money in major and minor units', () => {
  it("knows each currency's decimals, and assumes 2 for a code ISO 4217 does not list", () => {
    assert.deepEqual(
      ['USD', 'EUR', 'JPY', 'KWD', 'QQQ'].map((c) => currencyDecimals(c)),
      [2, 2, 0, 3, 2],
    );
  });

  it("takes the decimals from ISO 4217's minor unit, not from Intl's display digits", () => {
    // Intl (CLDR) shows HUF, IDR, COP, PKR… with 0 decimals and IQD with 0; ISO's minor units are 2 and 3.
    const iso = { HUF: 2, IDR: 2, COP: 2, PKR: 2, LBP: 2, IRR: 2, IQD: 3, CLF: 4, UYW: 4, UYI: 0, CLP: 0 };
    assert.deepEqual(Object.fromEntries(Object.keys(iso).map((c) => [c, currencyDecimals(c)])), iso);
    // Withdrawn since an amount may have been stored in them: each had 2 (SLL too, which Intl shows with 0).
    assert.deepEqual(
      ['HRK', 'SLL', 'ZWL', 'BGN'].map((c) => currencyDecimals(c)),
      [2, 2, 2, 2],
    );
  });

  it('converts HUF, IDR, IQD and CLF amounts with their ISO decimals both ways', () => {
    for (const [minor, currency, major] of [
      [123456, 'HUF', '1234.56'],
      [15000000, 'IDR', '150000.00'],
      [1250, 'IQD', '1.250'],
      [12345, 'CLF', '1.2345'],
    ] as const) {
      assert.equal(formatMajorUnits(minor, currency), major, currency);
      assert.equal(parseMajorUnits(major, currency), minor, currency);
    }
    assert.equal(parseMajorUnits('1234', 'HUF'), 123400);
    assert.equal(parseMajorUnits('1.23456', 'CLF'), null);
  });

  it('shows an amount on the pages with ISO decimals (HUF 1,234.56, not HUF 1,235)', () => {
    // Intl puts a no-break space between a code and the number.
    const shown = (cents: number, currency: string) => money(cents, currency).replaceAll('\u00a0', ' ');
    assert.equal(shown(123456, 'HUF'), 'HUF 1,234.56');
    assert.equal(shown(1250, 'IQD'), 'IQD 1.250');
    assert.equal(shown(12345, 'CLF'), 'CLF 1.2345');
    assert.equal(shown(1250, 'USD'), '$12.50');
    assert.equal(shown(600, 'JPY'), '¥600');
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
