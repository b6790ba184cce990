/** Time zones are stored by their current IANA names, which Intl must read as the same zones. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalTimeZone } from '../../src/modules/validation.js';

/** The id Node's Intl gives a zone (for a renamed one, its old name). */
const intlId = (zone: string) => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;

describe('canonicalTimeZone', () => {
  it('names renamed zones by their current IANA names, links by their zones', () => {
    for (const [given, stored] of [
      ['Asia/Kolkata', 'Asia/Kolkata'],
      ['Asia/Calcutta', 'Asia/Kolkata'],
      ['Europe/Kyiv', 'Europe/Kyiv'],
      ['Asia/Ho_Chi_Minh', 'Asia/Ho_Chi_Minh'],
      ['Asia/Kathmandu', 'Asia/Kathmandu'],
      ['America/Nuuk', 'America/Nuuk'],
      ['US/Eastern', 'America/New_York'],
      ['europe/berlin', 'Europe/Berlin'],
      ['utc', 'UTC'],
    ]) {
      assert.equal(canonicalTimeZone(given as string), stored, given);
    }
  });

  it('gives every zone Intl knows a name Intl reads as the same zone, and keeps that name', () => {
    const zones = Intl.supportedValuesOf('timeZone');
    assert.ok(zones.length > 400, `Intl knows ${zones.length} zones`);
    for (const zone of zones) {
      const name = canonicalTimeZone(zone);
      assert.equal(intlId(name), intlId(zone), `${zone} → ${name}: the same zone`);
      assert.equal(canonicalTimeZone(name), name, `${name} is kept as stored`);
    }
  });
});
