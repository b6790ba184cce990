/** Which currency codes a request may name: ISO 4217's current list, whatever ICU Node was built with. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ISO_4217_CODES, iso4217MinorUnits } from '../../src/iso4217.js';
import { isCurrencyCode, isStoredCurrencyCode } from '../../src/modules/validation.js';

describe('ISO 4217 currency codes', () => {
  it('accepts current codes that Intl does not list: funds (CLF, USN, BOV, CHE) and new ones (XCG, XAD)', () => {
    for (const code of ['CLF', 'USN', 'BOV', 'CHE', 'CHW', 'COU', 'MXV', 'UYI', 'UYW', 'VED', 'XCG', 'XAD', 'clf']) {
      assert.equal(isCurrencyCode(code), true, code);
    }
  });

  it('refuses withdrawn codes that Intl still lists (HRK, SLL, ZWL, ANG, CUC, BGN)', () => {
    for (const code of ['HRK', 'SLL', 'ZWL', 'ANG', 'CUC', 'BGN', 'hrk'])
      assert.equal(isCurrencyCode(code), false, code);
  });

  it('refuses the codes without a minor unit (gold, SDR, test, no currency) and what is not a code', () => {
    for (const code of ['XAU', 'XAG', 'XDR', 'XSU', 'XTS', 'XXX', 'QQQ', 'US', 'USDD', '']) {
      assert.equal(isCurrencyCode(code), false, code);
    }
  });

  it('lets a filter over stored amounts name any code that is or was ISO 4217, and nothing else', () => {
    for (const code of [
      ...ISO_4217_CODES,
      'HRK',
      'SLL',
      'ZWL',
      'ANG',
      'CUC',
      'BGN',
      'DEM',
      'FRF',
      'XDR',
      'XAU',
      'hrk',
    ]) {
      assert.equal(isStoredCurrencyCode(code), true, code);
    }
    for (const code of ['QQQ', 'XYZ', 'US', 'USDD', '', 'e1r']) assert.equal(isStoredCurrencyCode(code), false, code);
  });

  it('lists every code once, sorted, each with a minor unit of 0, 2, 3 or 4', () => {
    assert.deepEqual([...ISO_4217_CODES], [...new Set(ISO_4217_CODES)].sort());
    assert.equal(ISO_4217_CODES.length, 165);
    for (const code of ISO_4217_CODES) {
      assert.match(code, /^[A-Z]{3}$/);
      assert.ok([0, 2, 3, 4].includes(iso4217MinorUnits(code) ?? -1), code);
    }
  });
});
